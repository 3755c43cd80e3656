// The Messages view (C5): the account's named agents (the directory) and their conversations,
// newest first, a page at a time from the server. A conversation's newest message and the
// link to read it come only for the names this connection acts as (M5); for the others the
// row says who talks with whom and when, and who can read it.
"use strict";

import { api, el, pages, show, when } from "./core.js";

export async function renderMessages(params) {
  const before = params.get("before") || "";
  const agent = params.get("agent") || "";
  const [directory, listed] = await Promise.all([
    api("GET", "/v1/agents"),
    api("GET", `/v1/agents/conversations${before ? `?before=${encodeURIComponent(before)}` : ""}`),
  ]);
  const go = (change) => {
    const next = new URLSearchParams({ before, agent, ...change });
    for (const [key, value] of [...next]) if (!value) next.delete(key);
    const query = next.toString();
    history.pushState(null, "", `/messages${query ? `?${query}` : ""}`);
    pages.rerender();
  };
  const wanted = agent ? `agent:${agent.toLowerCase()}` : "";
  const rows = listed.conversations.filter((c) => !wanted || c.agents.some((a) => a.address === wanted));
  show(
    el("h1", {}, "Messages"),
    el("h2", {}, "Named agents"),
    agentTable(directory.agents, agent, go),
    el("h2", {}, agent ? `Conversations of ${agent}` : "Conversations"),
    agent ? el("p", {}, el("button", { type: "button", "data-testid": "all-agents", onclick: () => go({ agent: "" }) }, "Show every agent's")) : null,
    rows.length ? el("div", { "data-testid": "named-conversations" }, rows.map(conversationRow))
      : el("p", { class: "muted", "data-testid": "named-conversations-none" }, "No conversations here."),
    listed.next_before ? el("button", {
      type: "button", "data-testid": "older-conversations", onclick: () => go({ before: listed.next_before }),
    }, "Older conversations") : null,
  );
}

function agentTable(agents, chosen, go) {
  if (!agents.length) {
    return el("p", { class: "muted", "data-testid": "agents-none" },
      "No named agents yet. Register one with: agentworks messages register NAME");
  }
  return el("table", { "data-testid": "named-agents" },
    el("tr", {}, el("th", {}, "Name"), el("th", {}, "Purpose"), el("th", {}, "Provider"), el("th", {}, "Seen")),
    agents.map((a) => el("tr", { "data-testid": "named-agent" },
      el("td", {}, el("button", {
        type: "button", class: "link", "data-testid": "agent-filter", "aria-pressed": String(a.agent_name === chosen),
        onclick: () => go({ agent: a.agent_name, before: "" }),
      }, a.agent_name)),
      el("td", {}, a.purpose || ""),
      el("td", { class: "muted" }, a.provider || ""),
      el("td", {}, el("span", { class: `state ${a.online ? "online" : "offline"}` }, a.online ? "online" : "offline"),
        a.last_seen_at ? el("span", { class: "muted" }, ` ${when(a.last_seen_at)}`) : null))));
}

function conversationRow(conv) {
  const [a, b] = conv.agents;
  const names = conv.agents.filter((p) => p.address !== "external").map((p) => p.address.slice(6));
  return el("div", { class: "card", "data-testid": "named-conversation", "data-conversation": conv.conversation_id },
    el("div", { class: "row" },
      conv.readable
        ? el("a", { href: `/inbox/c/${encodeURIComponent(conv.conversation_id)}`, "data-testid": "open-named-conversation" },
          `${a.address} → ${b.address}`)
        : el("strong", {}, `${a.address} → ${b.address}`),
      el("span", { class: `state ${conv.status}` }, conv.status),
      el("span", { class: "muted" }, `last ${when(conv.last_activity_at)}`)),
    conv.latest
      ? el("div", { class: "preview", "data-testid": "preview" },
        el("span", { class: "muted" }, `${conv.latest.sender}: `), conv.latest.first_line)
      : el("div", { class: "muted", "data-testid": "hidden-body" },
        conv.status === "expired"
          ? "Expired: its messages are gone."
          : `Its messages are for ${names.join(" and ")} to read: sign in with a connection on one of those names' allow-lists (agentworks --config … inbox).`));
}
