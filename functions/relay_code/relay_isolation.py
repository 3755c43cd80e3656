"""What fences one attempt's process in, beyond being a process of its own.

On Lambda the function is the fence: its role reaches no table, the microVM holds nothing of
another run, and neither setting below is set. The local stack runs this same code in its
own process, next to the embedded AWS, the data folder and the admin config, so it sets:

    RELAY_SANDBOX=bwrap             each attempt runs under bubblewrap: a new user, PID, IPC
                                    and mount namespace that sees the release, a private
                                    temp folder and the Python it needs; not the data folder,
                                    the home folder or any other process.
    RELAY_UNSANDBOXED_ACCOUNTS=a,b  where no sandbox exists: the accounts whose relays may
                                    still run (the first account's, or `*` when the developer
                                    allowed every account's); any other is refused.

Standard library only, as the rest of this function's package.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

SANDBOX_ENV = "RELAY_SANDBOX"
UNSANDBOXED_ACCOUNTS_ENV = "RELAY_UNSANDBOXED_ACCOUNTS"
# What an interpreter needs of the root filesystem, read-only (symlinks stay symlinks).
_SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
# DNS, TLS roots and the time zone, for code that calls out over HTTPS; no secrets.
_ETC_PATHS = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/ssl",
    "/etc/ca-certificates",
)
SANDBOX_UID = 65534  # nobody: the relay's user owns nothing outside its own folders

UNSANDBOXED_REFUSAL = (
    "this local stack has no sandbox for relay code (bubblewrap is missing or cannot make "
    "namespaces here), so it runs only the first account's relays; install bubblewrap, or "
    "start `agentworks dev --allow-unsandboxed-relays` to run every account's relays "
    "unsandboxed (see docs/relays.md)"
)


@dataclass(frozen=True)
class Isolation:
    sandbox: str = ""  # "bwrap" or "" (none beyond the process)
    unsandboxed_accounts: frozenset[str] | None = None  # None: no restriction (Lambda)

    @classmethod
    def from_environment(cls) -> Isolation:
        accounts = os.environ.get(UNSANDBOXED_ACCOUNTS_ENV)
        return cls(
            sandbox=os.environ.get(SANDBOX_ENV, ""),
            unsandboxed_accounts=(
                frozenset(a for a in accounts.split(",") if a) if accounts is not None else None
            ),
        )

    def refusal(self, account_id: str) -> str | None:
        """Why this account's attempt may not run here; None when it may."""
        if self.sandbox or self.unsandboxed_accounts is None:
            return None
        if "*" in self.unsandboxed_accounts or account_id in self.unsandboxed_accounts:
            return None
        return UNSANDBOXED_REFUSAL

    def interpreter(self) -> str:
        # In the sandbox, the base interpreter: a virtualenv's packages are the stack's, not
        # the relay's (on Lambda the runtime's Python has only its own).
        return getattr(sys, "_base_executable", sys.executable) if self.sandbox else sys.executable

    def command(self, argv: list[str], work: Path, readable: list[Path]) -> list[str]:
        """`argv`, as it runs here: inside the sandbox, `work` is its only writable folder."""
        if self.sandbox != "bwrap":
            return argv
        return [*bwrap_prefix(work, readable), "--", *argv]


def bwrap_prefix(work: Path, readable: list[Path]) -> list[str]:
    prefix = [
        "bwrap",
        "--unshare-user",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--uid", str(SANDBOX_UID),
        "--gid", str(SANDBOX_UID),
        "--die-with-parent",
        "--new-session",  # no TIOCSTI into the stack's terminal
        "--proc", "/proc",  # this namespace's processes only: the attempt and its children
        "--dev", "/dev",
        "--tmpfs", "/tmp",
    ]  # fmt: skip
    for path in _SYSTEM_PATHS:
        if os.path.islink(path):
            prefix += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            prefix += ["--ro-bind", path, path]
    for path in _ETC_PATHS:
        if os.path.exists(path):
            prefix += ["--ro-bind", path, path]
    for folder in [Path(sys.base_prefix), *readable]:
        prefix += ["--ro-bind", str(folder), str(folder)]
    # The network stays shared: relay code calls the API on this machine's loopback. What
    # else listens there (the embedded AWS) refuses requests without the stack's keys.
    prefix += ["--bind", str(work), str(work), "--chdir", str(work)]
    return prefix


def account_of(credential: str) -> str:
    """The account in a run credential (`awr1.<account>.<run>.<secret>`)."""
    parts = credential.split(".")
    return parts[1] if len(parts) == 4 else ""
