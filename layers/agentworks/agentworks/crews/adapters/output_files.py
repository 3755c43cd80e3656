"""Paths of the files an agent produces: always relative, never outside the output folder."""

from __future__ import annotations

import posixpath
from typing import Any


def safe_relative_path(path: Any) -> str | None:
    """The normalized relative path, or None when it would leave the output folder."""
    if not isinstance(path, str) or not path.strip() or "\\" in path or "\x00" in path:
        return None
    normal = posixpath.normpath(path.strip())
    if normal.startswith("/") or normal == "." or normal.split("/")[0] == "..":
        return None
    return normal
