"""How many history events an execution of this project's state machines records, computed
from the ASL (statemachines/*.asl.json) so the 25,000-event quota of a Standard execution
can be checked for runs far larger than a test can make.

Per state, what AWS records (GetExecutionHistory event types):
- Task on a Lambda ARN: TaskStateEntered, LambdaFunctionScheduled, LambdaFunctionStarted,
  LambdaFunctionSucceeded, TaskStateExited (5); each retried attempt adds Scheduled,
  Started and Failed (3).
- Task on `lambda:invoke.waitForTaskToken`: TaskStateEntered, TaskScheduled, TaskStarted,
  TaskSubmitted, TaskSucceeded, TaskStateExited (6) — however long the token waits.
- Choice, Pass, Succeed, Wait: …StateEntered and …StateExited (2). Fail: FailStateEntered.
- Inline Map: MapStateEntered, MapStateStarted, MapStateSucceeded, MapStateExited (4), and
  per iteration MapIterationStarted and MapIterationSucceeded (2) plus its states.
- Distributed Map, in the parent: the inline Map's four plus MapRunStarted and
  MapRunSucceeded (6); each item is a child execution with a history of its own.
- An execution: ExecutionStarted and ExecutionSucceeded (2).

Calibrated against moto's executor (tests/integration/test_workflow_history.py): moto
records the same events for these states, with one difference — a Distributed Map's items
run in-process and their events are recorded nowhere (AWS gives each child execution its
own history). The model follows AWS: the parent and each child are counted apart.

Paths are sequences of state names; each step of a path is checked against the ASL's
transitions (Next, Choices, Default, Catch), so the model cannot drift from the machine.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agentworks import limits

ROOT = Path(__file__).resolve().parents[2]
QUOTA = 25_000  # a Standard execution's history events (hard quota)
MARGIN = 20_000  # what a scenario's worst case must stay under


@cache
def asl(name: str) -> dict[str, Any]:
    return dict(json.loads((ROOT / "statemachines" / f"{name}.asl.json").read_text()))


INLINE = "Inline"  # the suffix of a run of stages' copy of the stage states


def workflow_states() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The workflow machine's top states, a stage's states, a step's states (an item's
    names; a run of stages enters the same states, named …Inline)."""
    top = asl("workflow_run")["States"]
    stage = top["Items"]["ItemProcessor"]["States"]["Stages"]["ItemProcessor"]["States"]
    return top, stage, stage["Steps"]["ItemProcessor"]["States"]


def inline_copy(stages: dict[str, Any]) -> dict[str, Any]:
    """What the run of stages' StagesInline must be: an item's Stages with every state
    name inside it suffixed (state names are unique across a machine), ending at
    RunEnded instead of the item's ItemEnded."""
    names = {"Stages"}

    def collect(states: dict[str, Any]) -> None:
        for name, state in states.items():
            names.add(name)
            if state["Type"] == "Map":
                collect(state["ItemProcessor"]["States"])

    collect(stages["ItemProcessor"]["States"])

    def renamed(node: Any) -> Any:
        if isinstance(node, list):
            return [renamed(n) for n in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "States":
                out[key] = {n + INLINE: renamed(v) for n, v in value.items()}
            elif key in ("Next", "Default", "StartAt") and value in names:
                out[key] = value + INLINE
            elif key == "Next" and value == "ItemEnded":
                out[key] = "RunEnded"
            else:
                out[key] = renamed(value)
        return out

    return dict(renamed(stages))


def _successors(state: dict[str, Any]) -> set[str]:
    found = {state.get("Next"), state.get("Default")}
    found |= {c["Next"] for c in state.get("Choices", [])}
    found |= {c["Next"] for c in state.get("Catch", [])}
    return {n for n in found if n}


def check_path(states: dict[str, Any], path: list[str]) -> None:
    """Each state of `path` exists and may follow the one before it."""
    for before, after in itertools.pairwise(path):
        assert after in _successors(states[before]), f"{before} → {after} is no transition"


def state_events(state: dict[str, Any], worst: bool) -> int:
    """Events of one visit of a Task, Choice, Pass, Succeed, Wait or Fail state. `worst`:
    every retrier of a Task used to its MaxAttempts."""
    kind = state["Type"]
    if kind == "Task":
        retries = sum(r["MaxAttempts"] for r in state.get("Retry", [])) if worst else 0
        token = str(state["Resource"]).endswith(".waitForTaskToken")
        return 2 + 3 * (1 + retries) + (1 if token else 0)
    if kind == "Fail":
        return 1
    assert kind in ("Choice", "Pass", "Succeed", "Wait"), kind
    return 2


def path_events(states: dict[str, Any], path: list[str], worst: bool) -> int:
    check_path(states, path)
    return sum(state_events(states[name], worst) for name in path)


def inline_map(iterations: list[int]) -> int:
    """An inline Map whose iterations recorded `iterations` events each."""
    return 4 + sum(2 + events for events in iterations)


DISTRIBUTED_MAP_PARENT = 6
EXECUTION = 2


# ---- workflow steps ----

# A crew step, however long its call runs: the call's end answers AwaitCall's token.
CREW_STEP = ["RunStep", "Route", "AwaitCall", "CallEnded"]
CREW_STEP_QUICK = ["RunStep", "Route", "StepEnded"]  # the call had ended at the first look
AGENT_STEP = ["RunStep", "Route", "StepEnded"]
# The heaviest end of a crew step: its CallEnded task fails, and so does recording it.
CREW_STEP_FAILING = ["RunStep", "Route", "AwaitCall", "CallEnded", "StepInterrupted", "StepEnded"]
BUSY_ROUND = ["RunStep", "Route", "CrewBusy"]  # the Crew ran all the calls it may


def crew_step(worst: bool, busy_rounds: int = 0) -> list[str]:
    """The states a crew step enters: `busy_rounds` asks of a busy Crew first."""
    ending = CREW_STEP_FAILING if worst else CREW_STEP
    return BUSY_ROUND * busy_rounds + ending


def step_events(path: list[str], worst: bool) -> int:
    _, _, step = workflow_states()
    return path_events(step, path, worst)


def stage_events(step_paths: list[list[str]], worst: bool) -> int:
    """One iteration of the Stages Map: the Steps Map, the barrier and its gate."""
    _, stage, _ = workflow_states()
    steps = inline_map([step_events(p, worst) for p in step_paths])
    return steps + path_events(stage, ["Barrier", "Gate", "StageDone"], worst)


def stages_events(stages: list[list[list[str]]], worst: bool) -> int:
    """The Stages Map over a run's (or an item's) stages."""
    return inline_map([stage_events(s, worst) for s in stages])


def run_of_stages(stages: list[list[list[str]]], worst: bool) -> int:
    """A run without items: Shape, the stages inline, RunEnded, Finish, in one execution."""
    top, _, _ = workflow_states()
    check_path(top, ["Shape", "StagesInline", "RunEnded", "Finish"])
    own = sum(state_events(top[name], worst) for name in ("Shape", "RunEnded", "Finish"))
    return EXECUTION + own + stages_events(stages, worst)


@dataclass(frozen=True)
class Pipeline:
    parent: int  # the run's own execution
    child: int  # each item's child execution


def pipeline(stages: list[list[list[str]]], worst: bool) -> Pipeline:
    """A pipeline (W12): the parent runs the Distributed Map, each item a child execution
    (the Stages Map, then the processor's ItemEnded)."""
    top, _, _ = workflow_states()
    item_states = top["Items"]["ItemProcessor"]["States"]
    assert top["Items"]["ItemProcessor"]["ProcessorConfig"]["Mode"] == "DISTRIBUTED"
    check_path(top, ["Shape", "Items", "Finish"])
    own = sum(state_events(top[name], worst) for name in ("Shape", "Finish"))
    parent = EXECUTION + own + DISTRIBUTED_MAP_PARENT
    child = (
        EXECUTION + stages_events(stages, worst) + path_events(item_states, ["ItemEnded"], worst)
    )
    return Pipeline(parent, child)


# ---- the polling design this replaced, for comparison ----

POLL_SECONDS = 2  # its PollCall Wait
POLL_ROUND = 2 + 5 + 2  # Wait, RunStep, Route


def polled_crew_step(seconds: float) -> int:
    """Events a crew step cost when it polled its call every 2 s."""
    return int(seconds // POLL_SECONDS) * POLL_ROUND + 5 + 2 + 2


# ---- function calls and Relay runs ----


def function_call(rounds: int, worst: bool) -> int:
    """A call whose turns each wait for an answer (the heaviest round: Turn, Route and the
    longest wait, AwaitCrew), `rounds` times, then a last Turn that ends it."""
    states = asl("function_call")["States"]
    ending = ["Turn", "Route", "Finish"] + (["Interrupted", "Unrecorded"] if worst else [])
    path = ["Turn", "Route", "AwaitCrew"] * rounds + ending
    return EXECUTION + path_events(states, path, worst)


def relay_run(worst: bool) -> int:
    """A Relay run: its Attempt with every retry (failed attempts included), then the
    recorded failure."""
    states = asl("relay_run")["States"]
    path = ["Attempt", "RecordFailure"] if worst else ["Attempt"]
    return EXECUTION + path_events(states, path, worst)


def scenarios() -> dict[str, int]:
    """Worst-case history events per execution of each scenario the quota must hold for."""
    six_hours = run_of_stages([[crew_step(True)]], worst=True)
    pipe = pipeline([[crew_step(True)]] * 10, worst=True)
    return {
        "crew_step_waiting_6h_run": six_hours,
        "crew_step_waiting_6h_polled_before": polled_crew_step(6 * 3600),
        "function_call_max_turns": function_call(limits.MAX_TURNS, worst=True),
        "pipeline_1000x10_parent": pipe.parent,
        "pipeline_1000x10_per_item": pipe.child,
        # The same items as iterations of an inline Map, as before: one history for all
        # (counted with no wait and no retry at all).
        "pipeline_1000x10_inline_before": (
            1000 * (2 + stages_events([[crew_step(False)]] * 10, worst=False))
        ),
        "relay_run_max_attempts": relay_run(worst=True),
        # The widest run of stages (100 steps): every Crew busy through all its rounds
        # (tasks not retried), or every task retried to its maximum (no Crew busy). Both
        # at once on all 100 steps is not held (39,282: docs/benchmarks.md).
        "run_100_busy_crew_steps": run_of_stages(
            [[crew_step(False, limits.WORKFLOW_CREW_BUSY_ROUNDS_MAX)] * 5] * 20, worst=False
        ),
        "run_100_crew_steps_worst": run_of_stages([[crew_step(True)] * 5] * 20, worst=True),
    }
