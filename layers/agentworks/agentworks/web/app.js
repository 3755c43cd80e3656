// The AgentWorks Inbox, Messages and Runs pages (C5). Vanilla JS modules, no build step: it signs in
// with the one-time code in the URL fragment, then only calls the API (same origin, session
// cookie). Every text it shows is set with textContent: nothing from the API becomes markup.
"use strict";

import { ApiError, api, el, inWords, notice, pages, show, signedOut, stopLive } from "./core.js";
import { renderConversation, renderInbox, setNeedsCount } from "./inbox.js";
import { renderMessages } from "./messages.js";
import { followRuns } from "./push.js";
import { renderCall, renderRelayRun } from "./run_pages.js";
import { renderRuns } from "./runs.js";
import { renderWorkflowRun } from "./workflow_page.js";

function renderRun(runId) {
  if (runId.startsWith("wfrun_")) return renderWorkflowRun(runId);
  if (runId.startsWith("rrun_")) return renderRelayRun(runId);
  return renderCall(runId);
}

async function route() {
  stopLive();
  const path = location.pathname.replace(/\/+$/, "");
  const params = new URLSearchParams(location.search);
  try {
    if (path.startsWith("/inbox/c/")) await renderConversation(decodeURIComponent(path.slice(9)));
    else if (path === "/messages") await renderMessages(params);
    else if (path === "/runs") await renderRuns(params);
    else if (path.startsWith("/runs/")) await renderRun(decodeURIComponent(path.slice(6)));
    else await renderInbox(params);
    document.getElementById("sign-out").hidden = false;
    if (!path.startsWith("/inbox") || path.startsWith("/inbox/c/")) {
      api("GET", "/v1/conversations?limit=1").then((l) => setNeedsCount(l.counts.needs_you), () => null);
    }
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signedOut();
    show(el("h1", {}, "Not available"), el("p", { "data-testid": "error" }, inWords(error)));
  }
}
pages.rerender = route;

async function start() {
  const code = new URLSearchParams(location.hash.slice(1)).get("code");
  if (code) {
    history.replaceState(null, "", location.pathname + location.search); // the code is spent
    try {
      await api("POST", "/v1/session", { code });
    } catch (error) {
      notice(error instanceof ApiError && error.status < 500
        ? "Sign-in failed: this link was already used or has expired. Run `agentworks inbox` for a new one."
        : `Sign-in failed: ${inWords(error)}`);
    }
  }
  document.getElementById("sign-out").addEventListener("click", async () => {
    await api("POST", "/v1/session/logout").catch(() => null);
    stopLive();
    signedOut();
  });
  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a[href^='/']");
    if (!link || event.metaKey || event.ctrlKey || link.hasAttribute("download")) return;
    event.preventDefault();
    history.pushState(null, "", link.getAttribute("href"));
    route();
  });
  window.addEventListener("popstate", route);
  followRuns();
  await route();
}

start();
