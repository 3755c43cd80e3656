// The AgentWorks Inbox and Runs pages (C5). Vanilla JS, no build step: it signs in with the
// one-time code in the URL fragment, then only calls the API (same origin, session cookie).
// Every text it shows is set with textContent: nothing from the API becomes markup.
"use strict";

const CSRF = { "X-AgentWorks-Requested-With": "inbox" };
const TABS = [
  ["needs_you", "Needs You"],
  ["active", "Active"],
  ["waiting_on_others", "Waiting on Others"],
  ["closed", "Closed"],
];
const OPEN = ["waiting_for_review", "received", "in_progress"];
const main = () => document.getElementById("main");

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

async function api(method, path, body) {
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

// el("div", {class: "x", "data-testid": "y", onclick: f}, "text", child …): text is text.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

function notice(text) {
  const box = document.getElementById("notice");
  box.textContent = text;
  box.hidden = false;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => { box.hidden = true; }, 6000);
}

function show(...nodes) {
  main().replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
}

function signedOut() {
  document.getElementById("sign-out").hidden = true;
  show(
    el("h1", {}, "Sign in"),
    el("p", {}, "Run this in a terminal and open the link it prints:"),
    el("pre", { class: "card", "data-testid": "sign-in-help" }, "agentworks inbox"),
  );
}

// One action button: runs `act`, says what happened, re-renders the page.
function action(label, act, attrs) {
  return el("button", {
    type: "button",
    ...attrs,
    onclick: async (event) => {
      event.target.disabled = true;
      try {
        await act();
        notice(`${label}: done`);
      } catch (error) {
        notice(`${label}: ${error.message}`);
      }
      route();
    },
  }, label);
}

// ---- the Inbox ----

async function renderInbox(params) {
  const tab = params.get("tab") || "needs_you";
  const agent = params.get("agent") || "";
  const query = new URLSearchParams({ tab });
  if (agent) query.set("agent", agent);
  const [listed, crews] = await Promise.all([
    api("GET", `/v1/conversations?${query}`),
    api("GET", "/v1/crews").catch(() => ({ crews: [] })),
  ]);
  setNeedsCount(listed.counts.needs_you);
  const go = (next) => {
    const target = new URLSearchParams({ tab: next.tab ?? tab });
    if ((next.agent ?? agent)) target.set("agent", next.agent ?? agent);
    history.pushState(null, "", `/inbox?${target}`);
    route();
  };
  const tabs = el("div", { class: "tabs", role: "tablist" }, TABS.map(([key, label]) =>
    el("button", {
      type: "button", role: "tab", "aria-selected": String(key === tab),
      "data-testid": `tab-${key}`, onclick: () => go({ tab: key }),
    }, `${label} `, el("span", { class: "muted" }, `(${listed.counts[key] || 0})`))));
  const names = new Set(crews.crews.map((c) => c.target));
  listed.conversations.forEach((c) => c.agents.forEach((a) => a.address !== "external" && names.add(a.address)));
  if (agent) names.add(agent);
  const filter = el("select", {
    "data-testid": "agent-filter", "aria-label": "Show one agent's conversations",
    onchange: (event) => go({ agent: event.target.value }),
  }, el("option", { value: "" }, "All agents"),
  [...names].sort().map((name) => el("option", { value: name, selected: name === agent }, name)));
  const rows = listed.conversations.map(conversationRow);
  show(
    el("h1", {}, "Inbox"),
    tabs,
    el("div", { class: "toolbar" }, el("label", {}, "Agent ", filter)),
    rows.length ? el("div", { "data-testid": "conversations" }, rows)
      : el("p", { class: "muted", "data-testid": "empty" }, "Nothing here."),
  );
}

function setNeedsCount(count) {
  document.getElementById("needs-count").textContent = count ? String(count) : "";
}

function conversationRow(conv) {
  const [a, b] = conv.agents;
  return el("div", { class: "card", "data-testid": "conversation", "data-conversation": conv.conversation_id },
    el("div", { class: "row" },
      el("a", { href: `/inbox/c/${encodeURIComponent(conv.conversation_id)}`, "data-testid": "open-conversation" },
        `${a.address} → ${b.address}`),
      el("span", { class: `state ${conv.status}` }, conv.status),
      conv.needs_you ? el("span", { class: "badge" }, String(conv.needs_you)) : null,
      el("span", { class: "muted" }, when(conv.last_activity_at))),
    conv.open_requests.length
      ? el("div", { class: "muted" }, conv.open_requests.map((r) => `${r.label}`).join(" · "))
      : null);
}

// ---- one conversation ----

async function renderConversation(conversationId) {
  const conv = await api("GET", `/v1/conversations/${encodeURIComponent(conversationId)}`);
  const [a, b] = conv.agents;
  const byId = new Map(conv.requests.map((r) => [r.message_id, r]));
  const actor = conv.agents.find((x) => x.may_act && x.address === "external")
    || conv.agents.find((x) => x.may_act);
  const asAgent = (side) => (side.address.startsWith("agent:") ? side.address.slice(6) : null);
  const control = (verb) => () => api("POST",
    `/v1/conversations/${actor.inbox_id}/${verb}`, { agent_name: asAgent(actor) });
  const controls = actor && conv.status !== "closed" ? el("div", { class: "actions" },
    conv.status === "paused"
      ? action("Resume", control("resume"), { "data-testid": "resume" })
      : action("Pause", control("pause"), { "data-testid": "pause" }),
    action("Close", control("close"), { "data-testid": "close", class: "danger" }),
  ) : null;
  const remove = el("div", { class: "actions" }, action("Delete", async () => {
    if (!window.confirm("Delete this conversation and its messages? Its runs stay.")) return;
    await api("DELETE", `/v1/conversations/${(actor || b).inbox_id}`);
    history.pushState(null, "", "/inbox");
  }, { "data-testid": "delete", class: "danger" }));
  const messages = conv.messages.map((m) => messageCard(m, byId.get(m.message_id), conv, asAgent));
  show(
    el("p", {}, el("a", { href: "/inbox" }, "← Inbox")),
    el("h1", {}, `${a.address} → ${b.address}`),
    el("div", { class: "row" },
      el("span", { class: `state ${conv.status}`, "data-testid": "conversation-status" }, conv.status),
      el("span", { class: "muted" }, conv.tab_label),
      conv.runs_as_you ? el("span", { class: "muted" }, "runs as you") : null),
    controls,
    conv.questions.length ? el("h2", {}, "Questions waiting for you") : null,
    conv.questions.map(questionCard),
    el("h2", {}, "Messages"),
    el("div", { "data-testid": "messages" }, messages.length ? messages : el("p", { class: "muted" }, "No messages.")),
    answerForm(conv),
    el("h2", {}, "Delete"),
    remove,
  );
}

function messageCard(message, request, conv, asAgent) {
  const asked = conv.agents.find((x) => x.side === "b");
  const asker = conv.agents.find((x) => x.side === "a");
  const crew = asked.address.startsWith("crew:") ? asked.address.slice(5) : null;
  const buttons = [];
  if (request && request.state === "waiting_for_review" && asked.may_act && crew) {
    buttons.push(action("Release", () => api("POST", `/v1/crews/${crew}/release`,
      { message_id: request.message_id }), { "data-testid": "release", class: "primary" }));
    const reason = el("input", { placeholder: "Reason (optional)", "data-testid": "decline-reason", maxlength: 1000 });
    buttons.push(reason, action("Decline", () => api("POST", `/v1/crews/${crew}/decline`,
      { message_id: request.message_id, reason: reason.value || null }), { "data-testid": "decline" }));
  }
  if (request && OPEN.includes(request.state) && asker.may_act) {
    buttons.push(action("Cancel request", () => api("POST",
      `/v1/requests/${request.message_id}/cancel`, { agent_name: asAgent(asker) }),
    { "data-testid": "cancel-request" }));
  }
  return el("div", { class: "card", "data-testid": "message", "data-message": message.message_id },
    el("div", { class: "row" },
      el("strong", {}, message.sender),
      el("span", { class: "muted" }, `${message.kind} to ${message.to}`),
      el("span", { class: "muted" }, when(message.created_at)),
      request ? el("span", { class: `state ${request.state}`, "data-testid": "request-state" }, request.label) : null,
      request && request.deadline_at && OPEN.includes(request.state)
        ? el("span", { class: "muted", "data-testid": "deadline" }, `due ${when(request.deadline_at)}`) : null),
    el("div", { class: "body", "data-testid": "message-body" }, message.body),
    request && request.reason ? el("div", { class: "muted" }, request.reason) : null,
    buttons.length ? el("div", { class: "actions" }, buttons) : null);
}

function questionCard(question) {
  const answer = el("textarea", { "data-testid": "question-answer", "aria-label": "Your answer" });
  return el("div", { class: "card", "data-testid": "question" },
    el("div", { class: "body" }, question.question),
    answer,
    el("div", { class: "actions" }, action("Answer", () => api("POST",
      `/v1/calls/${encodeURIComponent(question.run_id)}/reply`,
      { request_id: question.request_id, answer: answer.value }),
    { "data-testid": "answer-question", class: "primary" })));
}

// Answer for the agent: a note, request or reply sent as that agent, marked as yours.
function answerForm(conv) {
  const sides = conv.agents.filter((x) => x.may_act);
  if (!sides.length || conv.status === "closed") return null;
  const who = el("select", { "data-testid": "answer-as" },
    sides.map((x) => el("option", { value: x.inbox_id }, x.address)));
  const kind = el("select", { "data-testid": "answer-kind" },
    ["note", "request", "reply"].map((k) => el("option", { value: k }, k)));
  const to = el("select", { "data-testid": "answer-to" }, el("option", { value: "" }, "(not a reply)"),
    conv.requests.map((r) => el("option", { value: r.message_id }, `${r.label}: ${r.message_id}`)));
  const text = el("textarea", { "data-testid": "answer-text", "aria-label": "Message" });
  return el("div", {},
    el("h2", {}, "Answer for the agent"),
    el("div", { class: "card" },
      el("div", { class: "toolbar" }, el("label", {}, "As ", who), el("label", {}, "Kind ", kind),
        el("label", {}, "Replying to ", to)),
      text,
      el("div", { class: "actions" }, action("Send as the agent", () => {
        const side = sides.find((x) => x.inbox_id === who.value);
        const message = { kind: kind.value, message: text.value, in_reply_to: to.value || null };
        if (side.address === "external") {
          // The account's own side is anyone's of the account to write in: a plain send.
          return api("POST", "/v1/messages", { inbox_id: side.inbox_id, ...message });
        }
        if (side.address.startsWith("agent:")) {  // a name you act as: a send as that name
          return api("POST", "/v1/messages",
            { inbox_id: side.inbox_id, agent_name: side.address.slice(6), ...message });
        }
        // Stepping in for a Crew: sent as it, marked as written by you.
        return api("POST", `/v1/conversations/${side.inbox_id}/answer`,
          { crew: side.address.split(":").pop(), ...message });
      }, { "data-testid": "answer-send", class: "primary" }))));
}

// ---- Runs ----

async function renderRuns() {
  const [workflows, listed, direct] = await Promise.all([
    api("GET", "/v1/workflows").catch(() => ({ runs: [] })),
    api("GET", "/v1/conversations?limit=100").catch(() => ({ conversations: [] })),
    api("GET", "/v1/calls?limit=50").catch(() => ({ calls: [] })),
  ]);
  const calls = [];
  for (const conv of listed.conversations) {
    const what = conv.agents.map((a) => a.address).join(" → ");
    for (const r of conv.runs) calls.push({ id: r.run_id, name: what, state: r.label, cls: r.state, at: r.created_at });
  }
  const open = el("input", { placeholder: "run or call id", "data-testid": "run-id", "aria-label": "Run id" });
  show(
    el("h1", {}, "Runs"),
    el("div", { class: "toolbar" }, open, el("button", {
      type: "button", onclick: () => { history.pushState(null, "", `/runs/${encodeURIComponent(open.value.trim())}`); route(); },
    }, "Open")),
    el("h2", {}, "Function calls"),
    runTable(direct.calls.map((c) => ({
      id: c.call_id, name: `${c.target} ${c.function}`, state: c.state, cls: c.state, at: c.created_at,
    })), "function-calls"),
    el("h2", {}, "Workflow runs"),
    runTable(workflows.runs.map((r) => ({ id: r.runId, name: r.workflowId, state: r.status, at: r.createdAt }))),
    el("h2", {}, "Runs in conversations"),
    runTable(calls),
  );
}

function runTable(rows, testid = "runs") {
  if (!rows.length) return el("p", { class: "muted" }, "None.");
  return el("table", { "data-testid": testid },
    el("tr", {}, el("th", {}, "Run"), el("th", {}, "What"), el("th", {}, "State"), el("th", {}, "Started")),
    rows.map((r) => el("tr", { "data-testid": "run" },
      el("td", {}, el("a", { href: `/runs/${encodeURIComponent(r.id)}`, "data-testid": "open-run" }, r.id)),
      el("td", {}, r.name), el("td", {}, el("span", { class: `state ${r.cls || r.state}` }, r.state)),
      el("td", { class: "muted" }, when(r.at)))));
}

async function renderRun(runId) {
  if (runId.startsWith("wfrun_")) return renderWorkflowRun(runId);
  const call = await api("GET", `/v1/calls/${encodeURIComponent(runId)}`);
  show(
    el("p", {}, el("a", { href: "/runs" }, "← Runs")),
    el("h1", {}, `${call.target} ${call.function || "(message run)"}`),
    el("div", { class: "row" }, el("span", { class: `state ${call.state}`, "data-testid": "run-status" }, call.state),
      el("span", { class: "muted" }, `${call.turns} turns`), el("span", { class: "muted" }, when(call.created_at))),
    call.pending_inputs.map((p) => questionCard({ run_id: call.call_id, request_id: p.request_id, question: p.question })),
    call.progress.length ? el("h2", {}, "Progress") : null,
    call.progress.map((line) => el("div", { class: "body" }, line)),
    call.final_text ? el("h2", {}, "Output") : null,
    call.final_text ? el("div", { class: "card body", "data-testid": "run-output" }, call.final_text) : null,
    call.errors.map((e) => el("div", { class: "card body" }, e)),
  );
}

async function renderWorkflowRun(runId) {
  const run = await api("GET", `/v1/workflows/${encodeURIComponent(runId)}`);
  const stages = (stageList, item) => stageList.map((stage) => el("div", { class: "stage", "data-testid": "stage" },
    el("h2", {}, `${stage.label} `, el("span", { class: `state ${stage.status}` }, stage.status)),
    el("div", { class: "steps" }, stage.steps.map((step) => stepCard(run, step, item)))));
  show(
    el("p", {}, el("a", { href: "/runs" }, "← Runs")),
    el("h1", {}, `${run.workflowId} · ${run.runId}`),
    el("div", { class: "row" },
      el("span", { class: `state ${run.status}`, "data-testid": "run-status" }, run.status),
      el("span", { class: "muted" }, `cost $${Number(run.cost || 0).toFixed(4)}`),
      el("span", { class: "muted" }, when(run.createdAt)), run.endedAt ? el("span", { class: "muted" }, `→ ${when(run.endedAt)}`) : null),
    run.error ? el("div", { class: "card body" }, run.error) : null,
    stages(run.stages || [], 0),
    (run.items || []).map((item) => el("div", { class: "card" },
      el("strong", {}, `item ${item.item}: `, el("span", { class: `state ${item.status}` }, item.status)),
      stages(item.stages, item.item))),
  );
}

function stepCard(run, step, item) {
  const answer = el("textarea", { "data-testid": "resolve-answer", "aria-label": "Your answer" });
  return el("div", { class: "card step", "data-testid": "step", "data-step": step.label },
    el("div", { class: "row" }, el("strong", {}, step.label),
      el("span", { class: `state ${step.status}`, "data-testid": "step-status" }, step.status)),
    el("div", { class: "muted" }, [step.startedAt && `started ${when(step.startedAt)}`,
      step.endedAt && `ended ${when(step.endedAt)}`, `cost $${Number(step.cost || 0).toFixed(4)}`].filter(Boolean).join(" · ")),
    step.question ? el("div", { class: "body", "data-testid": "step-question" }, step.question) : null,
    step.status === "waiting" ? [answer, el("div", { class: "actions" }, action("Answer", () => api("POST",
      `/v1/workflows/${encodeURIComponent(run.runId)}/resolve`, { step: step.label, answer: answer.value, item }),
    { "data-testid": "resolve", class: "primary" }))] : null,
    step.output ? el("div", { class: "body", "data-testid": "step-output" }, step.output) : null,
    step.error ? el("div", { class: "body" }, step.error) : null);
}

// ---- routing and sign-in ----

async function route() {
  const path = location.pathname.replace(/\/+$/, "");
  try {
    if (path.startsWith("/inbox/c/")) await renderConversation(decodeURIComponent(path.slice(9)));
    else if (path === "/runs") await renderRuns();
    else if (path.startsWith("/runs/")) await renderRun(decodeURIComponent(path.slice(6)));
    else await renderInbox(new URLSearchParams(location.search));
    document.getElementById("sign-out").hidden = false;
    if (!path.startsWith("/inbox") || path.startsWith("/inbox/c/")) {
      api("GET", "/v1/conversations?limit=1").then((l) => setNeedsCount(l.counts.needs_you), () => null);
    }
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) return signedOut();
    show(el("h1", {}, "Not available"), el("p", { "data-testid": "error" }, error.message));
  }
}

async function start() {
  const code = new URLSearchParams(location.hash.slice(1)).get("code");
  if (code) {
    history.replaceState(null, "", location.pathname + location.search); // the code is spent
    try {
      await api("POST", "/v1/session", { code });
    } catch (error) {
      notice(`Sign-in failed: ${error.message}`);
    }
  }
  document.getElementById("sign-out").addEventListener("click", async () => {
    await api("POST", "/v1/session/logout").catch(() => null);
    signedOut();
  });
  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a[href^='/']");
    if (!link || event.metaKey || event.ctrlKey) return;
    event.preventDefault();
    history.pushState(null, "", link.getAttribute("href"));
    route();
  });
  window.addEventListener("popstate", route);
  await route();
}

start();
