"""Key design of the messages table (docs/data-model.md has the access patterns).

ACCOUNT#<account>        AGENT#<name>        a registered name
ACCOUNT#<account>        COUNTERS            registrations held by the account
SERVER                   COUNTERS            registrations held by the whole store
CONV#<conversation>      META                parties, sequence numbers, rate window
CONV#<conversation>      IN#<side>#<seq>     a message delivered to one side
MBX#<agent_id>           <seq>               a first contact, copied to the name's mailbox
SUB#<account>#<sender>   S#<submission_id>   a submission-id binding (M2)
"""

from __future__ import annotations

from agentworks.ids import Side

SEQ_DIGITS = 10
TTL_ATTRIBUTE = "expires_ttl"


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


def message(conversation_ulid: str, side: Side, seq: int) -> dict[str, str]:
    return {"pk": f"CONV#{conversation_ulid}", "sk": f"IN#{side}#{seq_key(seq)}"}


def inbox_prefix(side: Side) -> str:
    return f"IN#{side}#"


def mailbox(agent_id: str, seq: int) -> dict[str, str]:
    return {"pk": f"MBX#{agent_id}", "sk": seq_key(seq)}


def submission(account_id: str, sender: str, submission_id: str) -> dict[str, str]:
    return {"pk": f"SUB#{account_id}#{sender}", "sk": f"S#{submission_id}"}
