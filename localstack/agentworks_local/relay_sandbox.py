"""Whether this machine can sandbox relay code, and what the relay function is told.

Relay code is the one part of the local stack that runs code a connection uploaded. Its
function (functions/relay_code/relay_isolation.py) reads two settings from the stack's
environment: RELAY_SANDBOX=bwrap runs each attempt under bubblewrap; without a sandbox,
RELAY_UNSANDBOXED_ACCOUNTS names the accounts whose relays may still run (the first
account's: its admin already holds everything the machine shows; `*` with
`--allow-unsandboxed-relays`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

# The names relay_isolation.py reads (the function's package cannot be imported from here).
SANDBOX_ENV = "RELAY_SANDBOX"
UNSANDBOXED_ACCOUNTS_ENV = "RELAY_UNSANDBOXED_ACCOUNTS"
# A developer's switch, to see how the stack behaves where no sandbox exists.
TURNED_OFF_ENV = "AGENTWORKS_RELAY_SANDBOX"
_PROBE = [
    "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent",
    "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--", "true",
]  # fmt: skip


@dataclass(frozen=True)
class RelaySandbox:
    kind: str  # "bwrap", or "" where none can be had
    reason: str = ""  # why none

    @property
    def available(self) -> bool:
        return bool(self.kind)

    def environment(self, first_account: str, allow_unsandboxed: bool) -> dict[str, str]:
        if self.available:
            return {SANDBOX_ENV: self.kind}
        return {UNSANDBOXED_ACCOUNTS_ENV: "*" if allow_unsandboxed else first_account}


def detect() -> RelaySandbox:
    """bubblewrap, when it is installed and can make namespaces here (a container may not
    let it); tried once, at start."""
    if os.environ.get(TURNED_OFF_ENV, "").lower() == "off":
        return RelaySandbox("", f"turned off by {TURNED_OFF_ENV}=off")
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return RelaySandbox("", "bubblewrap (bwrap) is not installed")
    try:
        tried = subprocess.run(
            [bwrap, *_PROBE], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return RelaySandbox("", f"bwrap did not run: {error}")
    if tried.returncode != 0:
        said = (tried.stderr.strip().splitlines() or ["no reason given"])[-1]
        return RelaySandbox("", f"bwrap cannot make namespaces here ({said})")
    return RelaySandbox("bwrap")
