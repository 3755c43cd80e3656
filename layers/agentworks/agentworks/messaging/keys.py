"""Key design of the messages table (docs/data-model.md has the access patterns).

ACCOUNT#<account>        AGENT#<name>        a registered name
ACCOUNT#<account>        COUNTERS            registrations held by the account
SERVER                   COUNTERS            registrations held by the whole store
CONV#<conversation>      META                parties, created/activity hour, lifecycle keys
CONV#<conversation>      M#<seq>             message <seq> of the conversation (either side)
MBX#<agent_id>           <seq>               a first contact, copied to the name's mailbox
SUB#<account>#<sender>   S#<submission_id>   a submission-id binding (M2)

`M#…` sorts before `META` ('#' < 'E'), so a descending Query of a conversation returns
META first and then its newest message: one request reads the whole send-time state.
"""

from __future__ import annotations

from agentworks.dynamo import TTL_ATTRIBUTE as TTL_ATTRIBUTE  # the key schema's TTL, too

SEQ_DIGITS = 10
MESSAGE_PREFIX = "M#"
LAST_SEQ = 10**SEQ_DIGITS - 1


def seq_key(seq: int) -> str:
    return f"{seq:0{SEQ_DIGITS}d}"


def agent(account_id: str, name: str) -> dict[str, str]:
    return {"pk": f"ACCOUNT#{account_id}", "sk": f"AGENT#{name}"}


def agent_prefix(account_id: str) -> tuple[str, str]:
    return f"ACCOUNT#{account_id}", "AGENT#"


def account_counters(account_id: str) -> dict[str, str]:
    return {"pk": f"ACCOUNT#{account_id}", "sk": "COUNTERS"}


def server_counters() -> dict[str, str]:
    return {"pk": "SERVER", "sk": "COUNTERS"}


def conversation(conversation_ulid: str) -> dict[str, str]:
    return {"pk": f"CONV#{conversation_ulid}", "sk": "META"}


def message(conversation_ulid: str, seq: int) -> dict[str, str]:
    return {"pk": f"CONV#{conversation_ulid}", "sk": message_sk(seq)}


def message_sk(seq: int) -> str:
    return f"{MESSAGE_PREFIX}{seq_key(seq)}"


def message_seq(sk: str) -> int:
    return int(sk.removeprefix(MESSAGE_PREFIX))


def is_message(sk: str) -> bool:
    return sk.startswith(MESSAGE_PREFIX)


def mailbox_pk(agent_id: str) -> str:
    return f"MBX#{agent_id}"


def mailbox(agent_id: str, seq: int) -> dict[str, str]:
    return {"pk": mailbox_pk(agent_id), "sk": seq_key(seq)}


def submission(account_id: str, sender: str, submission_id: str) -> dict[str, str]:
    return {"pk": f"SUB#{account_id}#{sender}", "sk": f"S#{submission_id}"}
