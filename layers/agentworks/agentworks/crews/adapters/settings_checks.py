"""Small checks shared by the adapters' `validate(settings)` functions.

Each returns human-readable problems (empty when fine) so a bad Crew definition is
refused with every problem listed at once, at definition time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def unknown_keys(settings: Mapping[str, Any], allowed: Iterable[str], where: str) -> list[str]:
    """Keys outside `allowed` (typos should fail when the Crew is defined, not when it runs)."""
    known = sorted(allowed)
    return [
        f"{where}: unknown setting '{key}' (known: {', '.join(known)})"
        for key in settings
        if key not in known
    ]


def required_str(settings: Mapping[str, Any], key: str, where: str) -> list[str]:
    """`key` must be a non-blank string."""
    value = settings.get(key)
    if not isinstance(value, str) or not value.strip():
        return [f"{where}: '{key}' is required and must be a non-empty string"]
    return []


def optional_str(settings: Mapping[str, Any], key: str, where: str) -> list[str]:
    """`key`, when present, must be a non-blank string."""
    if key in settings:
        return required_str(settings, key, where)
    return []


def optional_int(
    settings: Mapping[str, Any], key: str, where: str, minimum: int, maximum: int
) -> list[str]:
    """`key`, when present, must be an integer within [minimum, maximum]."""
    if key not in settings:
        return []
    value = settings[key]
    # bool is an int subclass; YAML `on` would otherwise pass as 1.
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        return [f"{where}: '{key}' must be an integer from {minimum} to {maximum}"]
    return []


def optional_number(
    settings: Mapping[str, Any], key: str, where: str, minimum: float, maximum: float
) -> list[str]:
    """`key`, when present, must be a number within [minimum, maximum]."""
    if key not in settings:
        return []
    value = settings[key]
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not minimum <= value <= maximum
    ):
        return [f"{where}: '{key}' must be a number from {minimum:g} to {maximum:g}"]
    return []
