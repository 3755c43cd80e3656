// The Inbox (C5): conversations by tab, one conversation with its requests, questions and
// controls, and answering for an agent.
"use strict";

import { api, action, el, pages, show, when } from "./core.js";
import { questionCard } from "./questions.js";

const TABS = [
  ["needs_you", "Needs You"],
  ["active", "Active"],
  ["waiting_on_others", "Waiting on Others"],
  ["closed", "Closed"],
];
const OPEN = ["waiting_for_review", "received", "in_progress"];

// ---- the Inbox ----

export async function renderInbox(params) {
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
    pages.rerender();
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

export function setNeedsCount(count) {
  document.getElementById("needs-count").textContent = count ? String(count) : "";
}

function conversationRow(conv) {
  const [a, b] = conv.agents;
  const open = conv.open_requests;
  const due = open.map((r) => r.deadline_at).filter(Boolean).sort()[0];
  return el("div", { class: "card", "data-testid": "conversation", "data-conversation": conv.conversation_id },
    el("div", { class: "row" },
      el("a", { href: `/inbox/c/${encodeURIComponent(conv.conversation_id)}`, "data-testid": "open-conversation" },
        `${a.address} → ${b.address}`),
      el("span", { class: `state ${conv.status}` }, conv.status),
      conv.needs_you ? el("span", { class: "badge", title: "Waiting for you" }, String(conv.needs_you)) : null,
      el("span", { class: "muted" }, when(conv.last_activity_at))),
    conv.latest ? el("div", { class: "preview", "data-testid": "preview" },
      el("span", { class: "muted" }, `${conv.latest.sender} (${conv.latest.kind}): `), conv.latest.first_line) : null,
    open.length
      ? el("div", { class: "muted", "data-testid": "waits" },
        `${a.address} waits on ${b.address}: ${open.map((r) => r.label).join(" · ")}`,
        due ? el("span", { "data-testid": "row-deadline" }, ` · due ${when(due)}`) : null)
      : null);
}

// ---- one conversation ----

export async function renderConversation(conversationId) {
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
  const remove = el("div", { class: "actions" }, action("Delete conversation", async () => {
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
      conv.runs_as_you ? el("span", { class: "muted", "data-testid": "runs-as-you" },
        "Runs as you: the work here uses your connection's permissions") : null),
    controls,
    conv.questions.length ? el("h2", {}, "Questions waiting for you") : null,
    conv.questions.map(questionCard),
    el("h2", {}, "Messages"),
    el("div", { "data-testid": "messages" }, messages.length ? messages : el("p", { class: "muted" }, "No messages.")),
    answerForm(conv),
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
  const replyingTo = el("label", { hidden: true }, "Replying to ", to);
  kind.addEventListener("change", () => { replyingTo.hidden = kind.value !== "reply"; });
  return el("div", {},
    el("h2", {}, "Answer for the agent"),
    el("div", { class: "card" },
      el("div", { class: "toolbar" }, el("label", {}, "As ", who), el("label", {}, "Kind ", kind),
        replyingTo),
      text,
      el("div", { class: "actions" }, action("Send as the agent", () => {
        const side = sides.find((x) => x.inbox_id === who.value);
        const reply = kind.value === "reply" ? to.value || null : null;
        const message = { kind: kind.value, message: text.value, in_reply_to: reply };
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
