// What every page uses: the API (same origin, session cookie, CSRF header), elements built
// with text only (nothing from the API becomes markup), times, notices and actions.
"use strict";

import { onRuns, pushOpen } from "./push.js";

const CSRF = { "X-AgentWorks-Requested-With": "inbox" };
export const main = () => document.getElementById("main");

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

export async function api(method, path, body) {
  const options = { method, headers: { ...CSRF }, credentials: "same-origin" };
  if (body !== undefined) {
    options.headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(body);
  }
  const response = await fetch(path, options);
  const data = await response.json().catch(() => null);
  if (!response.ok) {
    const error = (data && data.error) || {};
    throw new ApiError(response.status, error.code || "error", error.message || response.statusText);
  }
  return data;
}

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// el("div", {class: "x", "data-testid": "y", onclick: f}, "text", child …): text is text.
export function el(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// The same for SVG (the timeline): geometry in attributes, never in style.
export function svg(tag, attrs, ...children) {
  return build(document.createElementNS("http://www.w3.org/2000/svg", tag), attrs, children);
}

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

// "1.2 s", "3 min 4 s", "2 h 5 min": how long from `start` to `end` (now when open).
export function duration(start, end) {
  if (!start) return "";
  const ms = (end ? Date.parse(end) : Date.now()) - Date.parse(start);
  if (!(ms >= 0)) return "";
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60) ? `${Math.floor(s / 60)} min ` : ""}${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export const usd = (value) => `$${Number(value || 0).toFixed(4)}`;

// A JSON value shown as indented text (a result, arguments): text, never markup.
export function jsonBlock(value, testid) {
  return el("pre", { class: "card json", "data-testid": testid }, JSON.stringify(value, null, 2));
}

export function notice(text) {
  const box = document.getElementById("notice");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { box.hidden = true; }, 6000);
}

export function show(...nodes) {
  main().replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
}

// What went wrong, in words for a person: the API's message for a refusal, and what to do
// for the ones a person meets most.
export function inWords(error) {
  if (error instanceof ApiError) {
    if (error.status === 401) return "You are signed out. Run `agentworks inbox` in a terminal and open the link it prints.";
    if (error.status === 404) return "Not found, or not yours to see.";
    if (error.status >= 500) return "The service could not answer just now. Try again in a moment.";
    return error.message;
  }
  return "Could not reach the service. Check your connection and try again.";
}

export function signedOut() {
  document.getElementById("sign-out").hidden = true;
  show(
    el("h1", {}, "Sign in"),
    el("p", {}, "Run this in a terminal and open the link it prints:"),
    el("pre", { class: "card", "data-testid": "sign-in-help" }, "agentworks inbox"),
  );
}

// The page's refresh, set by `live`: cancelled by the next route.
let refresh = null;
let unfollow = () => {};

// Routing: each page calls `rerender` (set by the app) to draw itself again.
export const pages = { rerender: async () => {} };

// Draws the page again, unless a person is typing in it (then a moment later); `cause`
// ("notice" or "poll") is kept on the page for whoever wants to know why it moved.
function redraw(cause) {
  clearTimeout(refresh);
  const typing = [...document.querySelectorAll("textarea, input")].some(
    (field) => field === document.activeElement || field.value);
  if (typing) {
    refresh = setTimeout(() => redraw(cause), 1000);
    return;
  }
  document.body.dataset.redrawn = cause;
  pages.rerender();
}

// A page whose run is still going follows it: it draws itself again when the push channel
// says one of `runIds` changed, and only while that channel is down every few seconds.
// Its running clocks tick every second meanwhile.
export function live(going, runIds = []) {
  stopLive();
  if (!going) return;
  live.ticker = setInterval(() => {
    for (const clock of document.querySelectorAll("[data-started]")) {
      clock.textContent = duration(clock.getAttribute("data-started"), null);
    }
  }, 1000);
  unfollow = onRuns((notice) => {
    if (notice.more || (notice.run_ids || []).some((id) => runIds.includes(id))) redraw("notice");
  });
  const poll = () => {
    if (pushOpen()) refresh = setTimeout(poll, 3000); // the channel will say when
    else redraw("poll");
  };
  refresh = setTimeout(poll, 3000);
}

export function stopLive() {
  clearTimeout(refresh);
  clearInterval(live.ticker);
  unfollow();
  unfollow = () => {};
}

// One action button: runs `act`, says what happened, draws the page again.
export function action(label, act, attrs) {
  return el("button", {
    type: "button",
    ...attrs,
    onclick: async (event) => {
      event.target.disabled = true;
      try {
        await act();
        notice(`${label}: done`);
      } catch (error) {
        notice(`${label}: ${inWords(error)}`);
      }
      pages.rerender();
    },
  }, label);
}

// A running step's or call's clock: ticks while it runs (see `live`).
export function clock(start, end) {
  return el("span", { class: "muted", "data-started": end ? null : start, "data-testid": "elapsed" },
    duration(start, end));
}
