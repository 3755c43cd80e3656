"""One CLI grammar (issue 29): `agentworks GROUP VERB OBJECT`, the object positional with
its older flag still accepted, the same verbs across groups, and a typo answered with the
nearest command (no server needed)."""

from __future__ import annotations

import pytest

from agentworks_cli.main import build_parser, main


def parse(*argv: str):
    return build_parser().parse_args(list(argv))


# (the command's words, its object, the older flag for it, where the object lands, the rest)
PRIMARY_OBJECTS = [
    (["workflow", "status"], "wfrun_1", "--run-id", "run_id", []),
    (["workflow", "cancel"], "wfrun_1", "--run-id", "run_id", []),
    (["workflow", "retry"], "wfrun_1", "--run-id", "run_id", []),
    (["workflow", "resolve"], "wfrun_1", "--run-id", "run_id", ["--step", "s", "--answer", "a"]),
    (["functions", "status"], "call_1", "--call-id", "call_id", ["--wait"]),
    (["functions", "read"], "call_1", "--call-id", "call_id", []),
    (
        ["functions", "reply"],
        "call_1",
        "--call-id",
        "call_id",
        ["--request-id", "r", "--answer", "a"],
    ),
    (["functions", "complete"], "call_1", "--call-id", "call_id", ["--agent", "w"]),
    (["relays", "status"], "rrun_1", "--run-id", "run_id", []),
    (["relays", "retry"], "rrun_1", "--run-id", "run_id", []),
    (["webhooks", "delete"], "whk_1", "--id", "webhook_id", []),
    (["webhooks", "deliveries"], "whk_1", "--id", "webhook_id", []),
    (["messages", "ack"], "msg_1", "--message-id", "message_id", ["--delivery", "processed"]),
    (["messages", "wakeup", "cancel"], "wk_1", "--wakeup-id", "wakeup_id", []),
    (["messages", "register"], "bob", "--agent", "agent", ["--purpose", "Reviews"]),
    (["messages", "unregister"], "bob", "--agent", "agent", []),
    (["conversations", "show"], "inb_1", "--inbox", "inbox", []),
    (["conversations", "close"], "inb_1", "--inbox", "inbox", []),
    (["conversations", "delete"], "inb_1", "--inbox", "inbox", []),
]


@pytest.mark.parametrize(("words", "obj", "flag", "dest", "rest"), PRIMARY_OBJECTS)
def test_the_primary_object_is_positional_and_its_flag_still_works(words, obj, flag, dest, rest):
    by_position = parse(*words, obj, *rest)
    by_flag = parse(*words, flag, obj, *rest)
    assert getattr(by_position, dest) == obj
    assert vars(by_position) == vars(by_flag)


def test_the_object_is_required_once(capsys):
    assert main(["workflow", "status"]) == 2
    assert "the RUN is required: agentworks workflow status RUN" in capsys.readouterr().err
    assert main(["workflow", "status", "wfrun_1", "--run-id", "wfrun_2"]) == 2
    assert "RUN given twice (wfrun_1 and wfrun_2)" in capsys.readouterr().err
    assert parse("workflow", "status", "wfrun_1", "--run-id", "wfrun_1").run_id == "wfrun_1"


@pytest.mark.parametrize(
    ("alias", "verb"),
    [
        (["adapters", "show", "p"], ["adapters", "get", "p"]),
        (["crews", "show", "c"], ["crews", "get", "c"]),
        (["connections", "delete", "con_1"], ["connections", "revoke", "con_1"]),
        (["mcp-servers", "delete", "gh"], ["mcp-servers", "remove", "gh"]),
        (["messages", "delete", "bob"], ["messages", "unregister", "bob"]),
        (["workflow", "delete", "nightly"], ["workflow", "unregister", "nightly"]),
        (["workflow", "show", "wfrun_1"], ["workflow", "status", "wfrun_1"]),
        (["functions", "show", "call_1"], ["functions", "status", "call_1"]),
        (["relays", "show", "rrun_1"], ["relays", "status", "rrun_1"]),
    ],
)
def test_verbs_match_across_groups(alias, verb):
    by_alias, by_verb = vars(parse(*alias)), vars(parse(*verb))
    assert by_alias.pop("action") == alias[1] and by_verb.pop("action") == verb[1]
    assert by_alias == by_verb


def test_a_registered_workflow_can_be_unregistered():
    assert parse("workflow", "unregister", "nightly").workflow_id == "nightly"


@pytest.mark.parametrize(
    ("argv", "nearest"),
    [
        (["wrkflow", "list"], "workflow"),
        (["workflow", "stauts", "wfrun_1"], "status"),
        (["functions", "cal"], "call"),
        (["mcp-server", "list"], "mcp-servers"),
    ],
)
def test_a_typo_suggests_the_nearest_command(argv, nearest, capsys):
    assert main(argv) == 2
    assert f"did you mean '{nearest}'?" in capsys.readouterr().err


def test_no_suggestion_for_nothing_alike(capsys):
    assert main(["workflow", "zzzzzz"]) == 2
    assert "did you mean" not in capsys.readouterr().err
