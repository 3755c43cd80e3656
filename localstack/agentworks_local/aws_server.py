"""The embedded AWS endpoint: moto's server app, with the journal in front when the stack
keeps its state (durable_state.py), and on its socket only requests signed with the
stack's keys (aws_auth.py).

moto's own ThreadedMotoServer builds its app inside the serving thread; the stack needs the
app first, to restore the saved state into it before the first request is served.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from agentworks_local.aws_auth import SignedOnly, StackKeys
from agentworks_local.durable_state import DurableState, JournalingApp, RestoreReport
from agentworks_local.in_process import DynamoDBDirect


class AwsServer:
    def __init__(
        self,
        state: DurableState | None = None,
        host: str = "127.0.0.1",
        keys: StackKeys | None = None,
    ) -> None:
        """`keys`: what the socket accepts; None serves any request (tests of moto itself;
        the local stack always passes its own)."""
        from moto.moto_server.werkzeug_app import (
            DomainDispatcherApplication,
            create_backend_app,
        )

        self.moto_app = DomainDispatcherApplication(create_backend_app)
        self.state = state
        served: Any = JournalingApp(self.moto_app, state) if state else self.moto_app
        self.app: Any = SignedOnly(served, keys) if keys else served  # what the socket answers
        # What this process's own calls reach in process (in_process.py): the same state
        # and journal, DynamoDB without moto's Flask layer.
        direct = DynamoDBDirect(self.moto_app)
        self.local_app: Any = JournalingApp(direct, state) if state else direct
        self.host = host
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def restore(self) -> RestoreReport:
        """Puts the saved state back (before serving: nothing can see it half restored)."""
        return self.state.restore(DynamoDBDirect(self.moto_app)) if self.state else RestoreReport()

    def start(self) -> None:
        from moto.moto_server.werkzeug_app import MotoRequestHandler
        from werkzeug.serving import make_server

        # werkzeug logs every AWS call at INFO: noise to anyone but a moto developer.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        # Port 0: the OS picks a free one, so a busy port can't hang the start.
        self._server = make_server(
            self.host, 0, self.app, threaded=True, request_handler=MotoRequestHandler
        )
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="agentworks-aws", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def stop(self, fold: bool = True) -> None:
        """Stops serving; a durable state folds its journal in unless `fold` is False."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None
        if self.state is not None:
            self.state.close(fold)
