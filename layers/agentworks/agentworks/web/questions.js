// A question a run waits on, with the box a person answers it in (Inbox and run pages).
"use strict";

import { action, api, el } from "./core.js";

export function questionCard(question) {
  const answer = el("textarea", { "data-testid": "question-answer", "aria-label": "Your answer" });
  return el("div", { class: "card", "data-testid": "question" },
    el("div", { class: "body" }, question.question),
    answer,
    el("div", { class: "actions" }, action("Answer", () => api("POST",
      `/v1/calls/${encodeURIComponent(question.run_id)}/reply`,
      { request_id: question.request_id, answer: answer.value }),
    { "data-testid": "answer-question", class: "primary" })));
}
