// The Runs list (C5): function calls, workflow runs and the runs in conversations, filtered
// by state, kind, name and time, searched by id, a page at a time.
"use strict";

import { api, el, pages, show, when } from "./core.js";

const PAGE = 25;
const KINDS = [["calls", "Function calls"], ["workflows", "Workflow runs"], ["conversations", "Runs in conversations"]];

export async function renderRuns(params) {
  const [workflows, listed, direct] = await Promise.all([
    api("GET", `/v1/workflows${params.get("before") ? `?before=${encodeURIComponent(params.get("before"))}` : ""}`)
      .catch(() => ({ runs: [] })),
    api("GET", "/v1/conversations?limit=100").catch(() => ({ conversations: [] })),
    api("GET", `/v1/calls?limit=100${params.get("callsBefore") ? `&before=${encodeURIComponent(params.get("callsBefore"))}` : ""}`)
      .catch(() => ({ calls: [] })),
  ]);
  const rows = {
    calls: direct.calls.map((c) => ({
      id: c.call_id, name: `${c.target} ${c.function}`, state: c.state, cls: c.state, at: c.created_at,
    })),
    workflows: workflows.runs.map((r) => ({ id: r.runId, name: r.workflowId, state: r.status, at: r.createdAt })),
    conversations: listed.conversations.flatMap((conv) => conv.runs.map((r) => ({
      id: r.run_id, name: conv.agents.map((a) => a.address).join(" → "), state: r.label, cls: r.state, at: r.created_at,
    }))),
  };
  const filter = {
    state: params.get("state") || "", kind: params.get("kind") || "",
    name: params.get("name") || "", since: params.get("since") || "", before: params.get("before") || "",
    callsBefore: params.get("callsBefore") || "",
  };
  const go = (change) => {
    const next = new URLSearchParams({ ...filter, ...change });
    for (const [key, value] of [...next]) if (!value) next.delete(key);
    const query = next.toString();
    history.pushState(null, "", `/runs${query ? `?${query}` : ""}`);
    pages.rerender();
  };
  const states = [...new Set(Object.values(rows).flat().map((r) => r.state))].sort();
  const search = el("input", { placeholder: "run or call id", "data-testid": "run-id", "aria-label": "Run or call id" });
  const open = () => {
    const id = search.value.trim();
    if (!id) return;
    history.pushState(null, "", `/runs/${encodeURIComponent(id)}`);
    pages.rerender();
  };
  search.addEventListener("keydown", (event) => { if (event.key === "Enter") open(); });
  const name = el("input", { value: filter.name, placeholder: "workflow or target", "data-testid": "filter-name", "aria-label": "Name contains" });
  name.addEventListener("change", () => go({ name: name.value.trim() }));
  const since = el("input", { type: "date", value: filter.since, "data-testid": "filter-since", "aria-label": "Started on or after" });
  since.addEventListener("change", () => go({ since: since.value }));
  const select = (key, label, options) => el("label", {}, `${label} `, el("select", {
    "data-testid": `filter-${key}`, "aria-label": label, onchange: (event) => go({ [key]: event.target.value }),
  }, el("option", { value: "" }, "all"), options.map(([value, text]) =>
    el("option", { value, selected: value === filter[key] }, text))));
  const keep = (row) => (!filter.state || row.state === filter.state)
    && (!filter.name || row.name.toLowerCase().includes(filter.name.toLowerCase()))
    && (!filter.since || (row.at && row.at.slice(0, 10) >= filter.since));
  const sections = KINDS.filter(([key]) => !filter.kind || filter.kind === key).map(([key, title]) => [
    el("h2", {}, title),
    runTable(rows[key].filter(keep), key === "calls" ? "function-calls" : "runs"),
    // The server keeps older workflow runs and function calls on further pages.
    key === "workflows" && workflows.nextBefore ? el("button", {
      type: "button", "data-testid": "older-runs", onclick: () => go({ before: workflows.nextBefore }),
    }, "Older workflow runs") : null,
    key === "calls" && direct.next_before ? el("button", {
      type: "button", "data-testid": "older-calls", onclick: () => go({ callsBefore: direct.next_before }),
    }, "Older function calls") : null,
  ]);
  show(
    el("h1", {}, "Runs"),
    el("div", { class: "toolbar" }, search, el("button", { type: "button", onclick: open }, "Open")),
    el("div", { class: "toolbar", "data-testid": "filters" },
      select("kind", "Kind", KINDS), select("state", "State", states.map((s) => [s, s])),
      el("label", {}, "Name ", name), el("label", {}, "Since ", since)),
    sections,
  );
}

// A table of runs, PAGE rows at a time ("Show more" adds the next page).
function runTable(rows, testid, shown = PAGE) {
  if (!rows.length) return el("p", { class: "muted", "data-testid": `${testid}-none` }, "None.");
  const table = el("table", { "data-testid": testid },
    el("tr", {}, el("th", {}, "Run"), el("th", {}, "What"), el("th", {}, "State"), el("th", {}, "Started")),
    rows.slice(0, shown).map((r) => el("tr", { "data-testid": "run" },
      el("td", {}, el("a", { href: `/runs/${encodeURIComponent(r.id)}`, "data-testid": "open-run" }, r.id)),
      el("td", {}, r.name), el("td", {}, el("span", { class: `state ${r.cls || r.state}` }, r.state)),
      el("td", { class: "muted" }, when(r.at)))));
  if (rows.length <= shown) return table;
  const more = el("button", { type: "button", "data-testid": `${testid}-more` }, `Show more (${rows.length - shown} left)`);
  const box = el("div", {}, table, more);
  more.addEventListener("click", () => box.replaceWith(runTable(rows, testid, shown + PAGE)));
  return box;
}
