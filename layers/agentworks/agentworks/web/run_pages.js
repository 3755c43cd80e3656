// A function call's page and a Relay run's page (C5): where it stands, its result (rendered
// JSON, files to download), the question it waits on, what each turn or durable step did,
// its MCP tool calls and its errors with their evidence.
"use strict";

import { api, clock, duration, el, jsonBlock, live, show, usd, when } from "./core.js";
import { questionCard } from "./questions.js";

export async function renderCall(callId) {
  const call = await api("GET", `/v1/calls/${encodeURIComponent(callId)}`);
  const ended = call.terminal ? call.updated_at : null;
  show(
    el("p", {}, el("a", { href: "/runs" }, "← Runs")),
    el("h1", {}, `${call.target} ${call.function || "(message run)"}`),
    el("div", { class: "row" },
      el("span", { class: `state ${call.state}`, "data-testid": "run-status" }, call.state),
      el("span", { class: "muted" }, `${call.turns} turn${call.turns === 1 ? "" : "s"}`),
      el("span", { class: "muted", "data-testid": "run-cost" }, usd(call.cost_usd)),
      el("span", { class: "muted" }, `started ${when(call.created_at)}`),
      clock(call.created_at, ended)),
    call.pending_inputs.map((p) => questionCard({ run_id: call.call_id, request_id: p.request_id, question: p.question })),
    call.errors.length ? [el("h2", {}, "Errors"),
      call.errors.map((e) => el("div", { class: "card body error", "data-testid": "run-error" }, e))] : null,
    resultSection(call),
    call.files.length ? [el("h2", {}, "Files"), el("ul", { "data-testid": "files" },
      call.files.map((f) => el("li", {}, downloadLink(call.call_id, f.path), el("span", { class: "muted" }, ` ${f.size} bytes`))))] : null,
    call.mcp_calls.length ? mcpTable(call.mcp_calls) : null,
    call.progress.length ? [el("h2", {}, "Turns and progress"),
      el("ol", { class: "progress", "data-testid": "progress" }, call.progress.map((line) => el("li", {}, line)))] : null,
  );
  live(!call.terminal, [call.call_id]);
}

function resultSection(call) {
  const parts = [];
  if (call.final_text) parts.push(el("div", { class: "card body", "data-testid": "run-output" }, call.final_text));
  if (call.result !== null && call.result !== undefined) parts.push(jsonBlock(call.result, "run-result"));
  if (call.result_file) {
    parts.push(el("p", {}, "The result is large: ", downloadLink(call.call_id, call.result_file)));
  }
  return parts.length ? [el("h2", {}, "Result"), parts] : null;
}

// A link that fetches the file's pages through the API and saves them as one file.
function downloadLink(callId, path) {
  return el("a", {
    href: `/v1/calls/${encodeURIComponent(callId)}/files?path=${encodeURIComponent(path)}`,
    "data-testid": "download", download: path.split("/").pop(),
    onclick: async (event) => {
      event.preventDefault();
      const chunks = [];
      for (let page = 0, pages = 1; page < pages; page += 1) {
        const read = await api("GET", `/v1/calls/${encodeURIComponent(callId)}/files?path=${encodeURIComponent(path)}&page=${page}`);
        pages = read.pages;
        chunks.push(read.encoding === "base64"
          ? Uint8Array.from(atob(read.content), (c) => c.charCodeAt(0))
          : new TextEncoder().encode(read.content));
      }
      const url = URL.createObjectURL(new Blob(chunks));
      const save = el("a", { href: url, download: path.split("/").pop() });
      save.click();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    },
  }, path);
}

function mcpTable(calls) {
  return [el("h2", {}, "MCP tool calls"), el("table", { "data-testid": "mcp-calls" },
    el("tr", {}, el("th", {}, "Tool"), el("th", {}, "Outcome"), el("th", {}, "Took"), el("th", {}, "Result")),
    calls.map((c) => el("tr", {},
      el("td", {}, `${c.server} · ${c.tool}`), el("td", {}, el("span", { class: `state ${c.outcome}` }, c.outcome)),
      el("td", {}, `${c.duration_ms} ms`), el("td", { class: "muted" }, `${c.result_bytes} bytes`))))];
}

export async function renderRelayRun(runId) {
  const run = await api("GET", `/api/relay-runs/${encodeURIComponent(runId)}`);
  const ended = run.terminal ? run.updated_at : null;
  show(
    el("p", {}, el("a", { href: "/runs" }, "← Runs")),
    el("h1", {}, `relay:${run.relay} ${run.function} · v${run.version}`),
    el("div", { class: "row" },
      el("span", { class: `state ${run.status}`, "data-testid": "run-status" }, run.status),
      el("span", { class: "muted", "data-testid": "attempts" }, `attempt${run.attempts === 1 ? "" : "s"}: ${run.attempts}`),
      run.replayed ? el("span", { class: "muted" }, "replayed (the key returned the original run)") : null,
      el("span", { class: "muted" }, `started ${when(run.created_at)}`),
      clock(run.created_at, ended)),
    run.error ? [el("h2", {}, "Error"), el("div", { class: "card body error", "data-testid": "run-error" }, run.error)] : null,
    run.evidence ? [el("h3", {}, "Evidence"), jsonBlock(run.evidence, "run-evidence")] : null,
    run.result !== null && run.result !== undefined ? [el("h2", {}, "Result"), jsonBlock(run.result, "run-result")] : null,
    run.steps.length ? [el("h2", {}, "Durable steps"), el("table", { "data-testid": "relay-steps" },
      el("tr", {}, el("th", {}, "Step"), el("th", {}, "Outcome"), el("th", {}, "Attempt"), el("th", {}, "Took"), el("th", {}, "Replays")),
      run.steps.map((s) => el("tr", { "data-testid": "relay-step" },
        el("td", {}, s.name, s.safe ? el("span", { class: "muted" }, " (safe to repeat)") : null),
        el("td", {}, el("span", { class: `state ${s.status}` }, s.status)),
        el("td", {}, String(s.attempt)),
        el("td", {}, s.started_at ? duration(s.started_at, s.completed_at) : ""),
        el("td", {}, String(s.replays)))))] : null,
    run.mcp_calls.length ? mcpTable(run.mcp_calls) : null,
  );
  live(!run.terminal, [runId]);
}
