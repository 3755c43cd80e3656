"""The example Relay's entrypoint: `async def run(INPUT)` returns the run's final JSON."""

from __future__ import annotations

from typing import Any


async def run(INPUT: dict[str, Any]) -> dict[str, Any]:  # the Relay contract names it INPUT
    summaries = []
    for text in INPUT["texts"]:
        first = text.split(". ", 1)[0].strip()
        summaries.append({"summary": first, "words": len(text.split())})
    return {"summaries": summaries}
