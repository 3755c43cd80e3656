"""A hook command that records what the CLI gives it: `python dump_hook.py <Event>` writes its
stdin to `$DUMP_HOOK_DIR/<nn>-<Event>.json` (nn in arrival order). With
`DUMP_HOOK_BLOCK_ONCE` set, the first Stop answers `{"decision": "block", "reason": …}` with
that variable's text, as the bridge does when a message waits."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

folder = Path(os.environ["DUMP_HOOK_DIR"])
event = sys.argv[1]
payload = sys.stdin.read()
# O_EXCL on the numbered name keeps the order even when hooks of one event run together.
number = len(list(folder.glob("*.json")))
while True:
    try:
        with (folder / f"{number:02d}-{event}.json").open("x") as out:
            out.write(payload)
        break
    except FileExistsError:
        number += 1
reason = os.environ.get("DUMP_HOOK_BLOCK_ONCE")
if event == "Stop" and reason:
    try:
        (folder / "blocked").touch(exist_ok=False)
    except FileExistsError:
        sys.exit(0)
    print(json.dumps({"decision": "block", "reason": reason}))
