"""The groups `make mutate` runs: the modules each mutates, the tests that drive them, and
the wider tests its survivors are tried on (tools/mutate/run.py)."""

from __future__ import annotations

from dataclasses import dataclass

from equivalents import CLI, LAYER


@dataclass(frozen=True)
class Group:
    name: str
    modules: tuple[str, ...]  # files under src/, as mutmut sees them
    tests: tuple[str, ...]  # the test files that drive them
    # mutmut leaves decorated functions alone; these decorators are dropped from the staged
    # copy so the functions under them are mutated too (only ones the tests do not need).
    undecorate: tuple[str, ...] = ()
    # Seconds a test may take under a mutant before it counts as failed (killed). A mutant
    # that breaks a Crew's run makes the tests that wait for its end wait out their own
    # 30-second deadlines; no test of these groups takes more than a few seconds unbroken
    # (mutmut's clean run, with the same bound, shows it).
    test_timeout: int = 12
    # Tests (files or node ids) outside the selection that reach the same modules from
    # another feature's side. mutmut resets every verdict when its test selection changes,
    # so these are not added to it: each survivor of the mutmut run is tried against them
    # instead, in a process of its own, and one they fail is killed.
    wider: tuple[str, ...] = ()


GROUPS = (
    Group(
        "messaging",
        modules=(
            f"{LAYER}/messaging/service.py",
            f"{LAYER}/messaging/message_page_store.py",
            f"{LAYER}/messaging/submissions.py",
            f"{LAYER}/messaging/submission_store.py",
            f"{LAYER}/messaging/access.py",
        ),
        tests=(
            "tests/integration/test_http_messages.py",
            "tests/integration/test_message_access.py",
            "tests/integration/test_message_chain.py",
            "tests/integration/test_message_concurrency.py",
            "tests/integration/test_message_limits.py",
            "tests/integration/test_stale_head.py",
            "tests/integration/test_conversation_requests.py",
            "tests/integration/test_stepping_in.py",
            "tests/integration/test_crew_messages.py",
            "tests/integration/test_crew_views.py",
            "tests/integration/test_crew_ask_back.py",
            "tests/integration/test_mailbox_adapter.py",
            "tests/integration/test_store_reads.py",
            # authorize_send: the wakeups' and the conversation controls' sends as a side.
            "tests/integration/test_wakeups.py",
            "tests/integration/test_conversation_controls.py",
            "tests/unit/test_domain_rules.py",
            "tests/unit/test_consent_rules.py",
            "tests/unit/test_submission_claims.py",
            "tests/integration/test_ttl_lag.py",  # a binding past its TTL claimed again
        ),
        wider=(
            # A send into an inbox past its idle days is told so, in these words.
            "tests/integration/test_inbox_lifetime.py::"
            "test_m11_idle_inbox_expires_after_7_days_then_tick_retires_it",
            # A name's listener hears the messages sent into its inboxes (`to_agent`).
            "tests/integration/test_push_listeners.py::"
            "test_a_name_listener_hears_first_contacts_and_replies_once_per_batch",
            # A page read is tallied as the account's usage.
            "tests/integration/test_usage.py::test_usage_counts_what_a_scripted_run_did",
            # The dashboard's "sent": each message stored once.
            "tests/integration/test_operation_metrics.py::"
            "test_a_stored_send_counts_once_and_its_replay_not_again",
            # A bounded connection reads an account inbox whose peer is within its bounds.
            "tests/integration/test_connection_bounds.py::"
            "test_a3b_an_account_inbox_is_refused_when_its_peer_is_outside_the_bounds",
        ),
    ),
    Group(
        "identity",
        modules=(
            f"{LAYER}/identity/service.py",
            f"{LAYER}/identity/bearer.py",
            f"{LAYER}/authentication.py",
            f"{LAYER}/identity/tokens.py",
        ),
        tests=(
            "tests/integration/test_authorization_matrix.py",
            "tests/integration/test_narrowed_principals.py",
            "tests/integration/test_child_connections.py",
            "tests/integration/test_connection_bounds.py",
            "tests/integration/test_identity_rules.py",
            "tests/integration/test_identity_service_rules.py",
            "tests/integration/test_web_inbox.py",
            "tests/integration/test_push_listeners.py",
            "tests/integration/test_push_tickets.py",  # the ?ticket= of a WebSocket upgrade
            "tests/unit/test_call_token_route.py",
            "tests/unit/test_domain_rules.py",
        ),
        wider=(
            # What an authentication leaves behind: the log keys of its caller, and the
            # dashboard's count of refusals.
            "tests/integration/test_log_state.py::"
            "test_an_unauthenticated_request_logs_nothing_of_the_previous_callers",
            "tests/integration/test_operation_metrics.py::"
            "test_a_refused_authentication_is_counted_under_the_dashboards_name",
        ),
    ),
    Group(
        "crew_calls",
        modules=(
            f"{LAYER}/crews/calls.py",
            f"{LAYER}/crews/call_bounds.py",
        ),
        tests=(
            "tests/integration/test_function_calls.py",
            "tests/integration/test_function_rules.py",
            "tests/integration/test_call_list.py",
            "tests/integration/test_crew_limits.py",
            "tests/integration/test_restart_calls.py",
            "tests/integration/test_call_reconciliation.py",
            "tests/integration/test_mailbox_adapter.py",
            "tests/integration/test_workflow_functions.py",
            "tests/integration/test_operation_metrics.py",
            "tests/integration/test_call_rules.py",
            "tests/integration/test_call_replies.py",
            "tests/integration/test_mailbox_posts.py",
            "tests/integration/test_call_cancel_rules.py",  # cancel, and A2A ListTasks' read
            "tests/integration/test_mcp_tool_use.py",
            "tests/unit/test_call_bounds.py",
        ),
        wider=(
            # A cancelled call answers the workflow step waiting for it.
            "tests/integration/test_workflow_crew_steps.py::"
            "test_a_crew_steps_call_cancelled_by_itself_ends_the_step",
            # args nested to the limit and one level past it.
            "tests/integration/test_bad_input.py::test_f3_args_nested_past_the_limit_are_400",
        ),
        # The reconciliation tests wait out Step Functions' retries of a failing finish
        # (15 s unbroken).
        test_timeout=45,
    ),
    Group(
        "relay_runs",
        modules=(f"{LAYER}/relays/run_store.py",),
        tests=(
            "tests/integration/test_relay_runs.py",
            "tests/integration/test_relay_steps.py",
            "tests/integration/test_relay_step_limit.py",
            "tests/integration/test_relay_write_faults.py",
            "tests/integration/test_relay_item_sizes.py",
            "tests/integration/test_relay_run_rules.py",
            "tests/integration/test_store_reads.py",
            "tests/integration/test_relay_reconcile.py",
            "tests/integration/test_relay_mcp_calls.py",  # `state`: the cancel watch's read
        ),
        wider=(
            # Twenty first admissions of one key: the key's condition refuses all but one.
            "tests/integration/test_exactly_once_races.py::"
            "test_r3_twenty_first_admissions_of_one_key_make_one_run",
            # A run's end counts its usage in one transaction with it.
            "tests/integration/test_usage_runs.py::test_relay_runs_count_a_call_and_their_states",
        ),
    ),
    Group(
        "bridge_journal",
        modules=(f"{CLI}/bridge/journal.py", f"{CLI}/bridge/outbox.py"),
        tests=("tests/unit/test_bridge_journal.py", "tests/unit/test_bridge_journal_rules.py"),
        # One lock around each call, for the daemon's threads; the tests here use one thread.
        undecorate=("@locked",),
    ),
    Group(
        "workflow_engine",
        modules=(f"{LAYER}/workflows/engine.py",),
        tests=(
            "tests/integration/test_workflow_engine_steps.py",
            "tests/integration/test_workflow_runs.py",
            "tests/integration/test_workflow_rules.py",
            "tests/integration/test_workflow_pipelines.py",
            "tests/integration/test_workflow_waits.py",
            "tests/integration/test_workflow_policies.py",
            "tests/integration/test_workflow_plans.py",
            "tests/integration/test_workflow_crew_steps.py",
            "tests/integration/test_runner_steps.py",
            "tests/integration/test_a2a_adapter.py",  # a step that waits on an agent's task
        ),
        wider=(
            # A step's turn with MCP tools: given to the agent, its calls recorded on the step.
            *(
                f"tests/integration/test_mcp_tool_use.py::{name}"
                for name in (
                    "test_an_admitted_call_from_a_workflow_step_succeeds_and_is_recorded",
                    "test_a_workflow_step_cannot_call_a_tool_its_profile_does_not_admit",
                    "test_cancelling_the_run_cancels_its_steps_in_flight_call",
                    "test_a_workflow_steps_large_call_is_kept_beside_its_session",
                    "test_a_workflow_steps_calls_are_recorded_when_its_turn_then_fails",
                )
            ),
            # W6/W7: journaled steps replayed (retry, cache).
            "tests/integration/test_workflow_replays.py",
            # W10: a step's session calls, lists and reads functions.
            "tests/integration/test_workflow_functions.py::"
            "test_a_steps_session_calls_functions_as_the_source_workflow",
            "tests/integration/test_workflow_functions.py::"
            "test_a_steps_session_lists_calls_and_reads_a_call",
            # W10: a step that called another workflow's function wakes at that run's end.
            "tests/integration/test_workflow_functions.py::"
            "test_workflow_a_calls_bs_function_and_an_unlisted_workflow_is_refused",
            # A run's end counts the states its execution entered (its own ARN, from Finish).
            "tests/integration/test_usage_runs.py::"
            "test_a_finished_workflow_run_counts_the_states_its_execution_entered",
        ),
    ),
    Group(
        # Issue 30: calls and requests read as A2A tasks, and the a2a adapter's turn.
        "a2a",
        modules=(
            f"{LAYER}/a2a_server/call_tasks.py",
            f"{LAYER}/a2a_server/request_tasks.py",
            f"{LAYER}/a2a_server/parts.py",
            f"{LAYER}/crews/adapters/a2a_agent.py",
        ),
        tests=(
            "tests/unit/test_a2a_tasks.py",
            "tests/unit/test_a2a_adapter_words.py",
            "tests/unit/test_a2a_bounds.py",
            "tests/integration/test_a2a_adapter.py",
        ),
    ),
    Group(
        # Issue 30 §2: waits on external agents' tasks (the tick's reads, the agent's
        # notices) and §1: A2A push notification configs and their delivery.
        "external_tasks",
        modules=(
            f"{LAYER}/external_tasks/following.py",
            f"{LAYER}/external_tasks/wait_store.py",
            f"{LAYER}/external_tasks/waits.py",
            f"{LAYER}/a2a_server/push_configs.py",
            f"{LAYER}/a2a_server/push_notices.py",
        ),
        tests=(
            "tests/unit/test_a2a_push_bounds.py",
            "tests/unit/test_a2a_push_configs.py",
            "tests/integration/test_a2a_push_config_rules.py",
            "tests/integration/test_external_waits.py",
            "tests/integration/test_a2a_push_notices.py",
            "tests/integration/test_a2a_adapter.py",
        ),
    ),
)
