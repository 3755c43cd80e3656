"""The CLI config file: JSON {"url", "token", "account_id", "connection_id"} holding a bearer
token, so it is written mode 0600 (its directory 0700 when created here).

Standard library only: the CLI imports this on every command and must start fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

DEFAULT_CONFIG_PATH = Path("~/.agentworks/config.json")


class ConfigError(Exception):
    """The config file is missing, unreadable or not a JSON object; the message says which."""


def default_config_path() -> Path:
    return DEFAULT_CONFIG_PATH.expanduser()


def read_config(path: Path | str) -> dict[str, Any]:
    """The config's JSON object; ConfigError with a one-line reason otherwise."""
    path = Path(path).expanduser()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"no AgentWorks config at {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError:
        raise ConfigError(f"config {path} is not valid JSON") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config {path} must hold a JSON object")
    return data


def write_config(path: Path | str, data: dict[str, Any]) -> Path:
    """Writes `data` as JSON, mode 0600, atomically; returns the absolute path written."""
    path = Path(path).expanduser().absolute()
    if not path.parent.is_dir():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)  # mkdir's mode is masked by umask
    # The token must never be readable by others, not even briefly: create the temporary
    # file 0600 next to the target, then rename it over the target.
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2)
            handle.write("\n")
        os.chmod(tmp, 0o600)  # an existing temporary file keeps its old mode under O_CREAT
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
