// The push channel (C5): the same WebSocket the product's listeners use, followed for the
// account's runs (`?console=runs`). The browser signs the upgrade with the session cookie
// and its Origin, which the channel checks is this page's own. A notice names runs that
// changed; the page that shows one of them reads it again through the API. While the
// socket is down, pages poll instead (core.js `live`), and it reconnects with backoff.
"use strict";

const PING_MS = 5 * 60 * 1000; // API Gateway closes a socket idle for 10 minutes
const RETRY_MAX_MS = 30_000;
const listeners = new Set();
let socket = null;
let open = false;
let retry = 1000;
let pinger = null;

function state(now) {
  open = now === "open";
  document.body.dataset.push = now; // what the page follows by: "open" or "closed"
}

// The push URL the server put in the page (absent: no push channel, pages poll).
function pushUrl() {
  const meta = document.querySelector('meta[name="agentworks-push"]');
  return meta ? meta.getAttribute("content") : "";
}

export function pushOpen() {
  return open;
}

// `handler(notice)` for every `{type: "runs", run_ids, more}`; returns its removal.
export function onRuns(handler) {
  listeners.add(handler);
  return () => listeners.delete(handler);
}

export function followRuns() {
  const url = pushUrl();
  if (!url || socket) return;
  socket = new WebSocket(`${url.replace(/\/+$/, "")}/?console=runs`);
  socket.addEventListener("open", () => {
    retry = 1000;
    state("open");
    pinger = setInterval(() => socket && socket.send('{"action":"ping"}'), PING_MS);
  });
  socket.addEventListener("message", (event) => {
    let notice = null;
    try { notice = JSON.parse(event.data); } catch { return; }
    if (notice && notice.type === "runs") for (const handler of listeners) handler(notice);
  });
  socket.addEventListener("close", () => {
    clearInterval(pinger);
    socket = null;
    state("closed");
    setTimeout(followRuns, retry);
    retry = Math.min(retry * 2, RETRY_MAX_MS);
  });
}
