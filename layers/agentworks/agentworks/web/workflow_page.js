// A workflow run's page (C5, issue 29): its stages drawn as a graph — stage columns, step
// boxes coloured by state, the barrier between stages, a pipeline's items as rows — each
// step with its duration, turns, cost, session, output or error and what it waits for, and
// below it a timeline (waterfall) of the steps. Drawn from the run's record; HTML, CSS and
// SVG under the page's strict CSP (no inline style: geometry lives in SVG attributes).
"use strict";

import { action, api, clock, duration, el, live, show, svg, usd, when } from "./core.js";

const ENDED = new Set(["succeeded", "failed", "cancelled"]);

export async function renderWorkflowRun(runId) {
  const run = await api("GET", `/v1/workflows/${encodeURIComponent(runId)}`);
  const items = run.items || [];
  const budget = run.budget ? ` of ${usd(run.budget)} budget` : "";
  show(
    el("p", {}, el("a", { href: "/runs" }, "← Runs")),
    el("h1", {}, `${run.workflowId} · ${run.runId}`),
    el("div", { class: "row" },
      el("span", { class: `state ${run.status}`, "data-testid": "run-status" }, run.status),
      el("span", { class: "muted", "data-testid": "run-cost" }, `cost ${usd(run.cost)}${budget}`),
      el("span", { class: "muted" }, `started ${when(run.createdAt)}`),
      clock(run.createdAt, run.endedAt),
      run.retryOf ? el("a", { href: `/runs/${encodeURIComponent(run.retryOf)}` }, `retry of ${run.retryOf}`) : null),
    run.error ? el("div", { class: "card body error", "data-testid": "run-error" }, run.error) : null,
    el("h2", {}, "Graph"),
    items.length
      ? el("div", { class: "items", "data-testid": "items" }, items.map((item) => el("div", { class: "item", "data-testid": "item" },
        el("div", { class: "row" }, el("strong", {}, `item ${item.item}`),
          el("span", { class: "muted" }, typeof item.value === "object" ? JSON.stringify(item.value) : String(item.value)),
          el("span", { class: `state ${item.status}` }, item.status)),
        graph(run, item.stages, item.item))))
      : graph(run, run.stages || [], 0),
    el("h2", {}, "Timeline"),
    timeline(run, items),
    (run.notifications || []).length ? [el("h2", {}, "Notifications"), el("ul", {}, run.notifications.map((n) =>
      el("li", {}, `${n.event}${n.step ? ` (${n.step})` : ""}: ${n.delivered ? "delivered" : "not delivered"} after ${n.attempts} attempt(s)`,
        n.error ? el("span", { class: "muted" }, ` — ${n.error}`) : null)))] : null,
  );
  // The run's steps and the Crew calls they make are its own notices' runs.
  live(!ENDED.has(run.status), [runId, ...stepCalls(run, items)]);
}

// The stages left to right, a barrier between each two: a stage starts when every step of
// the one before it has ended.
function graph(run, stages, item) {
  const columns = [];
  stages.forEach((stage, number) => {
    if (number) {
      columns.push(el("div", { class: "barrier", "data-testid": "barrier", title: "Every step before this line ends before the next stage starts" },
        el("span", {}, "barrier")));
    }
    columns.push(el("div", { class: `stage column state-${stage.status}`, "data-testid": "stage" },
      el("h3", {}, stage.label || `stage ${number + 1}`, " ", el("span", { class: `state ${stage.status}` }, stage.status)),
      stage.steps.map((step) => stepBox(run, step, item))));
  });
  // Focusable: a keyboard can scroll it sideways when it is wider than the screen.
  return el("div", { class: "graph", "data-testid": "graph", tabindex: 0, role: "group", "aria-label": "Stages and steps" }, columns);
}

function stepBox(run, step, item) {
  const facts = [
    step.kind,
    step.turns ? `${step.turns} turn${step.turns === 1 ? "" : "s"}` : null,
    step.cost ? usd(step.cost) : null,
    step.replayed ? "replayed from the journal" : null,
    step.route ? `route: ${step.route}` : null,
  ].filter(Boolean).join(" · ");
  return el("div", { class: `card step box state-${step.status}`, "data-testid": "step", "data-step": step.label },
    el("div", { class: "row" }, el("strong", {}, step.label),
      el("span", { class: `state ${step.status}`, "data-testid": "step-status" }, step.status),
      step.startedAt ? clock(step.startedAt, step.endedAt) : null),
    facts ? el("div", { class: "muted" }, facts) : null,
    step.sessionId ? el("div", { class: "muted" }, "session ", el("code", {}, step.sessionId)) : null,
    waitsFor(run, step, item),
    step.output ? el("div", { class: "body", "data-testid": "step-output" }, step.output) : null,
    step.error ? el("div", { class: "body error", "data-testid": "step-error" }, step.error) : null,
    (step.mcpCalls || []).length ? el("div", { class: "muted" },
      `${step.mcpCalls.length} MCP tool call(s): ${step.mcpCalls.map((c) => `${c.tool} ${c.outcome}`).join(", ")}`) : null);
}

// What a step that has not ended waits for: a person's answer, a runner, a Crew's call.
function waitsFor(run, step, item) {
  if (step.status === "waiting") {
    const answer = el("textarea", { "data-testid": "resolve-answer", "aria-label": `Your answer for ${step.label}` });
    return el("div", { class: "waits", "data-testid": "waits-for" },
      el("div", { class: "muted" }, "Waits for your answer:"),
      step.question ? el("div", { class: "body", "data-testid": "step-question" }, step.question) : null,
      answer,
      el("div", { class: "actions" }, action("Answer", () => api("POST",
        `/v1/workflows/${encodeURIComponent(run.runId)}/resolve`, { step: step.label, answer: answer.value, item }),
      { "data-testid": "resolve", class: "primary" })));
  }
  if (ENDED.has(step.status) || step.status === "pending" || step.status === "skipped") {
    return step.callId ? el("div", { class: "muted" }, "call ", el("a", { href: `/runs/${encodeURIComponent(step.callId)}` }, step.callId)) : null;
  }
  if (step.callId) {
    return el("div", { class: "waits muted", "data-testid": "waits-for" }, "Waits for its Crew's call ",
      el("a", { href: `/runs/${encodeURIComponent(step.callId)}` }, step.callId));
  }
  if (step.runner) {
    return el("div", { class: "waits muted", "data-testid": "waits-for" }, `Runs on runner ${step.runner}`);
  }
  return null;
}

// A waterfall: one row a step, its bar from start to end (to now while it runs).
function timeline(run, items) {
  const rows = [];
  const add = (stages, prefix) => stages.forEach((stage) => stage.steps.forEach((step) => rows.push({ name: `${prefix}${step.label}`, step })));
  if (items.length) items.forEach((item) => add(item.stages, `${item.item}: `));
  else add(run.stages || [], "");
  const started = rows.filter((r) => r.step.startedAt);
  if (!started.length) return el("p", { class: "muted", "data-testid": "timeline" }, "No step has started yet.");
  const t0 = Date.parse(run.createdAt);
  const t1 = Math.max(run.endedAt ? Date.parse(run.endedAt) : Date.now(),
    ...started.map((r) => Date.parse(r.step.endedAt || new Date().toISOString())), t0 + 1);
  const width = 1000;
  const label = 180;
  const height = 22;
  const x = (iso) => label + ((Date.parse(iso) - t0) / (t1 - t0)) * (width - label - 10);
  return el("div", { class: "timeline", "data-testid": "timeline", tabindex: 0, role: "group", "aria-label": "Timeline" }, svg("svg", {
    viewBox: `0 0 ${width} ${rows.length * height + 24}`, role: "img",
    "aria-label": `Timeline of ${rows.length} steps over ${duration(run.createdAt, new Date(t1).toISOString())}`,
  },
  rows.map((row, index) => {
    const y = index * height + 4;
    const { step } = row;
    const parts = [svg("text", { x: 0, y: y + 14, class: "tl-label" }, row.name)];
    if (step.startedAt) {
      const left = x(step.startedAt);
      const right = Math.max(left + 2, x(step.endedAt || new Date(t1).toISOString()));
      parts.push(svg("rect", {
        x: left.toFixed(1), y, width: (right - left).toFixed(1), height: height - 8, rx: 3,
        class: `tl-bar state-${step.status}`, "data-testid": "timeline-bar",
      }, svg("title", {}, `${row.name}: ${step.status}, ${duration(step.startedAt, step.endedAt)}`)));
    }
    return svg("g", {}, parts);
  }),
  svg("text", { x: label, y: rows.length * height + 18, class: "tl-label" }, when(run.createdAt)),
  svg("text", { x: width - 10, y: rows.length * height + 18, class: "tl-label end" }, duration(run.createdAt, new Date(t1).toISOString()))));
}

function stepCalls(run, items) {
  const stages = [...(run.stages || []), ...items.flatMap((item) => item.stages || [])];
  return stages.flatMap((stage) => (stage.steps || []).map((step) => step.callId)).filter(Boolean);
}
