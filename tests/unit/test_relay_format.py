"""The Relay folder format (issue 9, R1): relay.yaml and its modules read into a manifest,
a content hash that depends on the source alone, and a malformed folder refused with the
file and line."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentworks import limits
from agentworks.relays.manifest import RelayFolderError
from agentworks.relays.package import package_files, package_folder

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "relays" / "summarize"
MODULE = b"async def run(INPUT):\n    return {}\n"


def _relay(manifest: str, **modules: bytes) -> dict[str, bytes]:
    return {"relay.yaml": manifest.encode(), **{f"{k}.py": v for k, v in modules.items()}}


def test_r1_the_example_relay_reads_into_its_manifest(tmp_path: Path) -> None:
    package = package_folder(EXAMPLE)
    assert package.manifest.name == "summarize"
    [function] = package.manifest.functions
    assert (function.name, function.entrypoint) == ("summarize", "summarize:run")
    assert function.input_schema["required"] == ["texts"]
    assert sorted(package.files) == ["relay.yaml", "summarize.py"]
    # The same source elsewhere, with caches and hidden files beside it: the same release.
    copy = tmp_path / "copy"
    shutil.copytree(EXAMPLE, copy)
    (copy / "__pycache__").mkdir(exist_ok=True)
    (copy / "__pycache__" / "summarize.cpython-312.pyc").write_bytes(b"\0")
    (copy / ".env").write_text("SECRET=1")
    assert package_folder(copy).content_hash == package.content_hash
    assert package_folder(copy).archive() == package.archive()  # deterministic bytes
    (copy / "summarize.py").write_text((copy / "summarize.py").read_text() + "\n# changed\n")
    assert package_folder(copy).content_hash != package.content_hash


MANIFEST = """name: tools
functions:
  - name: one
    entrypoint: pkg.mod:run
"""


def test_r1_entrypoints_name_modules_of_the_folder() -> None:
    files = {**_relay(MANIFEST), "pkg/__init__.py": b"", "pkg/mod.py": MODULE}
    assert package_files(files).manifest.functions[0].module == "pkg.mod"
    with pytest.raises(RelayFolderError, match=r"relay.yaml line 3: function one: no module"):
        package_files(_relay(MANIFEST))


@pytest.mark.parametrize(
    ("files", "says"),
    [
        (_relay("name: Tools\nfunctions: []\n"), "relay.yaml line 1: name:"),
        (_relay("name: t\nfunctions: []\n"), "relay.yaml line 1: functions: a list"),
        (_relay("name: t\nfunctions:\n  - {name: a, entrypoint: m}\n", m=MODULE),
         "relay.yaml line 3: function a: entrypoint is module:function"),
        (_relay("name: t\nfunctions:\n  - {name: a, entrypoint: 'm:run', inputs: {}}\n",
                m=MODULE), "relay.yaml line 3: unknown function key inputs"),
        (_relay("name: t\nfunctions:\n  - name: a\n    entrypoint: m:run\n"
                "    input_schema: {type: nope}\n", m=MODULE), "relay.yaml line 3: function a: "
         "input_schema"),
        (_relay("name: t\nfunctions: [\n", m=MODULE), "relay.yaml line 3: not valid YAML"),
        (_relay("name: t\nowner: me\nfunctions: []\n"), "relay.yaml line 1: unknown key owner"),
        (_relay("name: t\nfunctions:\n  - {name: a, entrypoint: 'm:run'}\n",
                m=b"def run(:\n"), "m.py line 1: Python syntax"),
        ({"m.py": MODULE}, "relay.yaml: missing"),
        ({**_relay(MANIFEST), "pkg/mod.py": b"\xff"}, "pkg/mod.py line 1: not UTF-8"),
        ({**_relay(MANIFEST), "../escape.py": MODULE}, "../escape.py: not a source file"),
    ],
)  # fmt: skip
def test_r1_a_malformed_relay_is_refused_with_the_file_and_line(
    files: dict[str, bytes], says: str
) -> None:
    with pytest.raises(RelayFolderError) as refused:
        package_files(files)
    assert says in refused.value.message


def test_r1_a_relays_size_holds_at_its_limits() -> None:
    manifest = "name: t\nfunctions:\n  - {name: a, entrypoint: 'm:run'}\n"
    base = _relay(manifest, m=MODULE)
    room = limits.RELAY_SOURCE_MAX_BYTES - sum(len(v) for v in base.values())
    at = {**base, "data.txt": b"x" * room}
    assert package_files(at).manifest.name == "t"
    with pytest.raises(RelayFolderError, match="bytes of source; at most"):
        package_files({**base, "data.txt": b"x" * (room + 1)})
    many = {**base, **{f"f{i}.txt": b"" for i in range(limits.RELAY_FILES_MAX - 2)}}
    assert len(package_files(many).files) == limits.RELAY_FILES_MAX
    with pytest.raises(RelayFolderError, match="at most 200 files"):
        package_files({**many, "one-more.txt": b""})
