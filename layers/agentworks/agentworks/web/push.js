// The push channel (C5): the same WebSocket the product's listeners use, followed for the
// account's runs (`?console=runs`). The upgrade is signed in by a push ticket the page asks
// the API for (its cookie and CSRF header) and by its Origin, which the channel checks is
// this page's own. A notice names runs that changed; the page that shows one of them reads
// it again through the API. While the socket is down, pages poll instead (core.js `live`),
// and it reconnects with backoff, each time with a new ticket (one lives 60 seconds).
//
// The ticket everywhere, not only where the cookie cannot go: deployed, the push API has
// its own host name and the host-only cookie never reaches it; on the local stack it would
// (cookies ignore ports), but one path means the local stack runs what is deployed, and a
// page cannot tell the two apart anyway. The channel still takes the cookie from the
// pages' Origin (pages loaded before tickets existed keep following).
"use strict";

import { api } from "./core.js";

const PING_MS = 5 * 60 * 1000; // API Gateway closes a socket idle for 10 minutes
const RETRY_MAX_MS = 30_000;
const listeners = new Set();
let socket = null;
let open = false;
let retry = 1000;
let pinger = null;
let connecting = false;

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

// A ticket for one upgrade (the API answers only this page's session).
async function ticket() {
  return (await api("POST", "/v1/session/push-tickets")).ticket;
}

function retryLater() {
  setTimeout(followRuns, retry);
  retry = Math.min(retry * 2, RETRY_MAX_MS);
}

export async function followRuns() {
  const url = pushUrl();
  if (!url || socket || connecting) return;
  connecting = true;
  let signed = "";
  try {
    signed = await ticket();
  } catch {
    // Signed out, or the API unreachable: pages poll (and say so) until a ticket comes.
    connecting = false;
    state("closed");
    retryLater();
    return;
  }
  connecting = false;
  if (socket) return;
  const query = `console=runs&ticket=${encodeURIComponent(signed)}`;
  socket = new WebSocket(`${url.replace(/\/+$/, "")}/?${query}`);
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
    retryLater();
  });
}
