"""The bridge's answers to its hooks and commands (the local socket's requests).

A hook of a session that is not attached is answered from the journal alone: no server
request, no output. Everything that reaches the server (attach, catch-up, sends) uses the
attachment's own connection.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworks_cli.bridge import children, commands, hook_files, hook_io, turns
from agentworks_cli.bridge.intake import Intake
from agentworks_cli.bridge.journal import Attachment, Journal, Sighting
from agentworks_cli.client import EXIT_UNREACHABLE, CliError

Answer = dict[str, Any]
PURPOSE_EVERY_SECONDS = 60  # a purpose changes at most once a minute
CHANNEL_LIVE_SECONDS = 5.0  # a channel child polls twice a second; gone after this


class Bridge:
    def __init__(
        self,
        journal: Journal,
        server_of: Callable[[Attachment | str], Any],
        person_config: str,
        on_attached: Callable[[Attachment], None] = lambda _: None,
    ) -> None:
        self.journal = journal
        self._home = journal.path.parent
        self.intake = Intake(journal, server_of)
        self._server_of = server_of
        self._person_config = person_config  # the login that attaches (its connection acts)
        self._on_attached = on_attached
        self._channel_seen: dict[str, float] = {}  # session -> when its channel last asked
        # Set by the process when the person opted in as a runner (runner.py).
        self.runner_status: Callable[[], dict[str, Any]] | None = None

    def handle(self, request: dict[str, Any]) -> Answer:
        op = request.get("op")
        if op == "hook":
            provider, event, payload = (
                str(request["provider"]),
                str(request["event"]),
                request["payload"],
            )
            self._saw(provider, event, payload, request.get("cli"))
            return self._hook(provider, event, payload)
        if op == "sessions":
            return {"sessions": self._sessions()}
        if op == "attachment":  # the local socket is the person's own (0600)
            found = self.journal.attachment(str(request["session"]))
            if found is None or found.state != "attached":
                return {"error": "this chat is not attached"}
            return {"agent_name": found.agent_name, "config_path": found.config_path}
        if op == "emitted":
            self.journal.emitted(str(request["session"]), list(request["message_ids"]))
            return {}
        if op == "attach":
            return self.attach(
                str(request["provider"]), str(request["session_id"]), request.get("name"),
                request.get("purpose"),
            )  # fmt: skip
        if op == "detach":
            return self.detach(f"{request['provider']}:{request['session_id']}")
        if op == "send":
            return self.send(str(request["session"]), dict(request["body"]))
        if op == "channel-take":
            return self._channel_take(f"{request['provider']}:{request['session_id']}")
        if op == "status":
            seen = {s.session: s for s in self.journal.sightings()}  # read once, not per chat
            return {
                "attachments": [
                    self._describe(a, seen.get(a.session)) for a in self.journal.attachments()
                ],
                "runner": self.runner_status() if self.runner_status else None,
            }
        return {"error": f"unknown request {op!r}"}

    # ---- hooks ----

    def _saw(
        self, provider: str, event: str, payload: dict[str, Any], cli: dict[str, Any] | None
    ) -> None:
        """Every chat whose hook ran, attached or not: what a bare `agentworks attach` picks
        from (discovery.py). Kept on this computer."""
        session = hook_io.session_of(provider, payload)
        if session is None:
            return
        cli = cli if isinstance(cli, dict) else {}
        self.journal.saw(
            Sighting(
                session=session,
                provider=provider,
                cwd=str(payload.get("cwd") or ""),
                cli_pid=_number_or_none(cli.get("pid"), int),
                cli_started=_number_or_none(cli.get("started"), float),
                event=event,
                seen_at=self.journal.now(),
            )
        )

    def _sessions(self) -> list[dict[str, Any]]:
        names = {
            a.session: a.agent_name for a in self.journal.attachments() if a.state == "attached"
        }
        return [{**vars(s), "agent_name": names.get(s.session)} for s in self.journal.sightings()]

    def _hook(self, provider: str, event: str, payload: dict[str, Any]) -> Answer:
        session = hook_io.session_of(provider, payload)
        if session is None:
            return {}
        if event == "user-prompt-submit":
            return self._prompt(provider, session, str(payload.get("prompt") or ""))
        attachment = self.journal.attachment(session)
        if attachment is None:
            return {}  # not attached: silent, and nothing leaves this computer
        if event == "session-end":
            self.journal.set_state(session, "offline")  # until a process holds it again
            return {}
        if attachment.state == "offline":
            attachment = self._resumed(attachment)
        if event == "stop":
            return self._stop(provider, attachment, payload)
        if event == "session-start":
            return {"output": hook_io.session_start_context(self._welcome(attachment))}
        return {}

    def _prompt(self, provider: str, session: str, prompt: str) -> Answer:
        # A prompt that repeats a delivered message is the message, not the person.
        command = None if self.journal.holds_body(prompt) else commands.parse(prompt)
        if command is None:
            if self.journal.attachment(session) is not None:
                self.journal.set_blocks(session, 0)  # the person spoke: the loop guard resets
            return {}
        _, session_id = session.split(":", 1)
        if command.error:
            said = f"AgentWorks: {command.error}."
        elif command.action == "detach":
            said = str(self.detach(session).get("said"))
        else:
            done = self.attach(provider, session_id, command.name, command.purpose)
            said = str(done.get("said") or done.get("error"))
        return {"output": hook_io.prompt_consumed(provider, said)}

    def _resumed(self, attachment: Attachment) -> Attachment:
        """A hook of an offline session: a process holds it again (`claude --resume`, a new
        `claude -p` turn), so it is attached again, with the name, and catches up now so
        this very Stop can deliver what waited."""
        self.journal.set_state(attachment.session, "attached")
        self.journal.take_name(attachment.session)
        resumed = self.journal.attachment(attachment.session) or attachment
        with contextlib.suppress(CliError):  # the server is away: the listener catches up
            self.intake.catch_up(resumed)
        self._on_attached(resumed)
        return resumed

    def _stop(self, provider: str, attachment: Attachment, payload: dict[str, Any]) -> Answer:
        if attachment.state != "attached":
            return {}
        if not turns.may_continue(provider, payload, attachment.blocks):
            self.journal.set_blocks(attachment.session, 0)
            return {}  # let the turn end; the next stop delivers what waits
        self._settle_channeled(attachment)
        offers = self.journal.take_offers(attachment.session, turns.OFFERS_PER_TURN)
        if not offers:
            self.journal.set_blocks(attachment.session, 0)
            return {}
        self.journal.set_blocks(attachment.session, attachment.blocks + 1)
        now = self.journal.now()
        guidance = turns.guidance_due(attachment.guidance_at, now)
        if guidance:
            self.journal.set_guidance_at(attachment.session, now)  # kept across restarts
        text = turns.continuation(attachment.agent_name, offers, guidance)
        return {
            "output": hook_io.stop_output(provider, text),
            "session": attachment.session,
            "message_ids": [o.message_id for o in offers],
        }

    def _settle_channeled(self, attachment: Attachment) -> None:
        """What the channel wrote is final once the agent acknowledged it on the server; the
        rest is offered again by this Stop (Claude drops the events of a channel it never
        registered: under `-p`, or with channels off). Unreachable: offered again."""
        waiting = self.journal.channeled(attachment.session)
        pages = {(c.inbox_id, c.read_after) for c in waiting}
        acknowledged: list[str] = []
        for inbox_id, read_after in pages:
            try:
                receipts = self.intake.receipts(attachment, inbox_id, read_after)
            except CliError:
                continue
            acknowledged += [
                c.message_id
                for c in waiting
                if receipts.get(c.message_id) in ("admitted", "processed")
            ]
        self.journal.acknowledged(attachment.session, acknowledged)

    def _channel_take(self, session: str) -> Answer:
        """The Claude channel child's poll (local only): the session's waiting messages,
        journaled as `channeled` (not final: see _settle_channeled) before the child writes
        them to Claude."""
        attachment = self.journal.attachment(session)
        if attachment is None or attachment.state != "attached":
            return {"messages": []}
        self._channel_seen[session] = self.journal.now()
        offers = self.journal.take_channel_offers(session, turns.OFFERS_PER_TURN)
        return {
            "session": session,
            "agent_name": attachment.agent_name,
            "messages": [
                {
                    "message_id": o.message_id,
                    "sender": o.sender,
                    "inbox_id": o.inbox_id,
                    "body": o.body,
                }
                for o in offers
            ],
            "message_ids": [o.message_id for o in offers],
        }

    def route(self, session: str) -> str:
        """`channel` while a Claude channel child polls for the session, else `hooks`."""
        seen = self._channel_seen.get(session)
        live = seen is not None and self.journal.now() - seen < CHANNEL_LIVE_SECONDS
        return "channel" if live else "hooks"

    def _welcome(self, attachment: Attachment) -> str:
        return f"This chat receives AgentWorks messages for {attachment.agent_name}."

    # ---- attachments ----

    def attach(
        self, provider: str, session_id: str, name: str | None, purpose: str | None
    ) -> Answer:
        session = f"{provider}:{session_id}"
        known = self.journal.attachment(session)
        agent_name = name or (known.agent_name if known else _default_name(provider, session_id))
        if known and purpose and purpose != known.purpose and known.purpose_at is not None:
            wait = PURPOSE_EVERY_SECONDS - (self.journal.now() - known.purpose_at)
            if wait > 0:
                return {"error": f"AgentWorks: the purpose changes at most once a minute; "
                                 f"try again in {wait:.0f} s."}  # fmt: skip
        person = self._server_of(self._person_config)
        try:
            registered = person.register(agent_name, purpose, provider)
            config = known.config_path if known and known.agent_name == agent_name else None
            if config is None or not Path(config).exists():
                # The agent acts through its own messaging-only child of the person's login.
                path, child = children.create(person, self._person_config, self._home, agent_name)
                allowed = [*registered["allowed_connection_ids"], child]
                person.register(agent_name, None, provider, allowed)
                config = str(path)
        except CliError as error:
            return {"error": f"AgentWorks: could not attach as {agent_name}: {error}"}
        attachment = self.journal.attach(session, provider, agent_name, config, purpose)
        self.journal.take_name(session)
        self._on_attached(attachment)
        return {"said": f"AgentWorks: this chat is attached as {agent_name}.", "name": agent_name}

    def detach(self, session: str) -> Answer:
        attachment = self.journal.attachment(session)
        if attachment is None:
            return {"said": "AgentWorks: this chat was not attached."}
        self.journal.detach(session)
        if attachment.config_path != self._person_config:
            with contextlib.suppress(CliError):  # already revoked, or the server is away
                children.revoke(self._server_of(self._person_config), attachment.config_path)
        name = attachment.agent_name
        return {"said": f"AgentWorks: this chat no longer receives messages for {name}."}

    def _describe(self, attachment: Attachment, seen: Sighting | None) -> dict[str, Any]:
        return {
            "session": attachment.session,
            "agent_name": attachment.agent_name,
            "state": attachment.state,
            "route": self.route(attachment.session),
            "messages": self.journal.states(attachment.session),
            "last_hook_at": seen.seen_at if seen else None,
            "hooks": self._hooks_said(attachment.provider, seen),
        }

    @staticmethod
    def _hooks_said(provider: str, seen: Sighting | None) -> str:
        """`ok`, or why the chat's hooks would not reach the bridge."""
        if seen is None or not seen.cwd:
            return "no hook has run for this chat yet"
        problem = hook_files.hook_problem(provider, Path(seen.cwd))
        if problem is None and provider == "codex":
            from agentworks_cli.bridge import codex_trust

            problem = codex_trust.untrusted(Path(seen.cwd))
        return problem or "ok"

    # ---- the outbox ----

    def send(self, session: str, body: dict[str, Any]) -> Answer:
        """Queued with a submission id first, then sent: an outage delays it, never doubles it."""
        attachment = self.journal.attachment(session)
        if attachment is None:
            return {"error": "this chat is not attached"}
        body = {**body, "agent_name": attachment.agent_name}
        body.setdefault("submission_id", str(uuid.uuid4()))
        self.journal.queue_send(session, body)
        self.flush_outbox()
        return {"queued": body["submission_id"]}

    def flush_outbox(self) -> int:
        """Sends what the outbox holds, oldest first; stops at the first outage."""
        sent = 0
        for session, body in self.journal.unsent():
            attachment = self.journal.attachment(session)
            if attachment is None:
                continue
            try:
                receipt = self._server_of(attachment).send(body)
            except CliError as error:
                if error.exit_code == EXIT_UNREACHABLE:
                    return sent  # kept; the next flush (after a reconnect) retries it
                receipt = {"error": str(error)}  # refused: retrying would not help
            self.journal.sent(str(body["submission_id"]), receipt)
            sent += 1
        return sent


def _default_name(provider: str, session_id: str) -> str:
    """A short stable name for a bare `/agentworks attach`: provider and session prefix."""
    return f"{provider}-{session_id.replace('-', '')[:8].lower()}"


def _number_or_none(value: Any, kind: type[Any]) -> Any:
    """`value` as `kind` when the hook sent a number, else None."""
    return kind(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
