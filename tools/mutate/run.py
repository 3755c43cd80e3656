"""`make mutate`: mutation testing of the rules that matter, with mutmut.

mutmut names a mutant by its file's path (`src/` stripped) and must find the tests importing
the same dotted name, so each group runs in a staging folder of its own (`.mutate/<group>`)
where the layer, the CLI and the local AWS sit under `src/` and everything the tests read
(the template, the state machines, the handlers) is copied beside them.
The repository is never touched.

Each group mutates a few modules and runs only the test files that drive them: mutmut runs
that selection twice up front (to learn which tests reach which function), then, per
mutant, only the tests that reached the mutated function, fastest first, stopping at the
first failure.

    python tools/mutate/run.py                  # every group, then the report
    python tools/mutate/run.py --group identity # one group
    python tools/mutate/run.py --report         # the report of the last runs only
"""

from __future__ import annotations

import argparse
import fnmatch
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

from equivalents import CLI, LAYER, why_equivalent
from groups import GROUPS, Group
from log_lines import only_in_log_calls
from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parents[2]
STAGING = ROOT / ".mutate"
REPORT = STAGING / "report.json"
# What the tests read from beside the code: handlers, the template, the state machines,
# and the layer's own sources (tests that scan them). Copied into each run by mutmut.
ALSO_COPY = [
    "functions",
    "statemachines",
    "template.yaml",
    "layers",
    "events",
    "skills",
    "examples",
]
LOCAL = "src/agentworks_local"


def stage(group: Group) -> Path:
    """The group's staging folder, refreshed from the repository (mutmut keeps its results
    in `mutants/` and reuses those whose function did not change)."""
    folder = STAGING / group.name
    folder.mkdir(parents=True, exist_ok=True)
    for source, target in (
        (ROOT / "layers/agentworks/agentworks", folder / LAYER),
        (ROOT / "cli/agentworks_cli", folder / CLI),
        (ROOT / "localstack/agentworks_local", folder / LOCAL),
        (ROOT / "tests", folder / "tests"),
        *((ROOT / name, folder / name) for name in ALSO_COPY),
    ):
        _mirror(source, target)
    for module in group.modules if group.undecorate else ():
        source = folder / module
        kept = [
            line
            for line in source.read_text().splitlines(keepends=True)
            if line.strip() not in group.undecorate
        ]
        source.write_text("".join(kept))
    _refresh_package_data(folder)
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pytest_options = pyproject["tool"]["pytest"]["ini_options"]
    (folder / "pyproject.toml").write_text(_toml(group, pytest_options))
    (folder / MYPY_CONFIG).write_text(_mypy_config(pyproject["tool"]["mypy"]))
    return folder


# The type checker `make lint` runs (CI too) sees each mutant before any test does: one
# that does not type-check could never land, and mutmut counts it caught without a test.
MYPY_CONFIG = "mypy-mutants.ini"


def _mypy_config(options: dict[str, Any]) -> str:
    """The repository's mypy options for the staged copy, where the packages sit in src/."""
    lines = ["[mypy]"]
    for key, item in options.items():
        # Not the paths; nor unused ignores: one a mutant makes unused is no type error.
        if key in ("mypy_path", "exclude", "warn_unused_ignores"):
            continue
        lines.append(f"{key} = {item}")
    lines += ["mypy_path = src", "cache_dir = ../.mypy_cache", ""]
    return "\n".join(lines)


def _refresh_package_data(folder: Path) -> None:
    """mutmut copies the sources into `mutants/` once and then regenerates only the Python
    files that changed: the package's other files (the web pages' HTML, JS and CSS) are
    copied again here, or the tests would read last run's."""
    mutants = folder / "mutants"
    for source in (folder / "src").rglob("*"):
        if not source.is_file() or source.suffix == ".py" or "__pycache__" in source.parts:
            continue
        target = mutants / source.relative_to(folder)
        if target.parent.is_dir():
            shutil.copy2(source, target)


def _mirror(source: Path, target: Path) -> None:
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    elif target.exists():
        target.unlink()
    if source.is_dir():
        shutil.copytree(
            source, target, ignore=shutil.ignore_patterns("__pycache__", "node_modules")
        )
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)


def _toml(group: Group, pytest_options: dict[str, object]) -> str:
    def value(item: object) -> str:
        return json.dumps(item)

    lines = ["[tool.mutmut]", 'source_paths = ["src"]']
    lines.append(f"only_mutate = {value(list(group.modules))}")
    lines.append(f"also_copy = {value(ALSO_COPY)}")
    lines.append(f"pytest_add_cli_args_test_selection = {value(list(group.tests))}")
    # mutmut reads mypy's report by the command's word "mypy" (on PATH: run_group's env).
    check = ["mypy", "--config-file", f"../{MYPY_CONFIG}", "--output", "json", *group.modules]
    lines.append(f"type_check_command = {value(check)}")
    # No parallel pytest inside a mutant's run (mutmut runs mutants side by side), no cache
    # writes from a hundred forks, and the group's bound on a test's time.
    options = ["-p", "no:xdist", "-p", "no:cacheprovider", f"--timeout={group.test_timeout}"]
    lines.append(f"pytest_add_cli_args = {value(options)}")
    lines.append("")
    lines.append("[tool.pytest.ini_options]")
    for key, item in pytest_options.items():
        lines.append(f"{key} = {value(item)}")
    return "\n".join(lines) + "\n"


def run_group(
    group: Group, max_children: int, minutes: float | None, only: list[str] | None = None
) -> None:
    folder = stage(group)
    print(f"\n== {group.name}: {len(group.modules)} modules, {len(group.tests)} test files")
    started = time.monotonic()
    deadline = started + minutes * 60 if minutes else None
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    # mutmut keeps a verdict until the mutated function changes, so a survivor would stay
    # one after a new test kills it: the survivors of the last run are tried again first.
    again = _survivors(group)
    passes = [only] if only else ([again] if again else []) + [[]]
    for names in passes:
        command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children)]
        left = deadline - time.monotonic() if deadline else None
        if left is not None and left <= 0:
            break
        # Its own process group: on the deadline mutmut and the forks it runs stop together.
        process = subprocess.Popen([*command, *names], cwd=folder, env=env, start_new_session=True)
        try:
            process.wait(timeout=left)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGINT)  # mutmut saves what it has on an interrupt
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            print(f"\n   {group.name}: stopped at its {minutes:g}-minute budget; the rest pending")
    if group.wider and (deadline is None or time.monotonic() < deadline):
        try_wider(group, deadline)
    print(f"   {group.name} took {time.monotonic() - started:.0f} s")


def _wider_verdicts(group: Group) -> dict[str, dict[str, object]]:
    path = STAGING / group.name / "wider.json"
    return json.loads(path.read_text()) if path.exists() else {}


def try_wider(
    group: Group,
    deadline: float | None = None,
    tests: tuple[str, ...] = (),
    only: list[str] | None = None,
) -> None:
    """Runs the group's wider tests (or `tests`: new ones, without a mutmut run) against
    each survivor not tried on them yet: a test failing, or running out of time, kills it.
    Verdicts go to `wider.json` with the mutant's diff (an edit of the mutated function
    makes them stale) and the tests that decided them; the next mutmut run tries the
    group's survivors again first anyway."""
    tests = tests or group.wider
    folder = STAGING / group.name
    verdicts = _wider_verdicts(group)
    mutants = folder / "mutants"
    for copy in (folder / "tests", mutants / "tests"):  # the tests as they are now
        _mirror(ROOT / "tests", copy)
    for module in group.modules:
        meta = mutants / f"{module}.meta"
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name in sorted(k for k, c in codes.items() if status_by_exit_code[c] in LEFT):
            if only and not any(fnmatch.fnmatch(name, pattern) for pattern in only):
                continue
            diff = _diff(folder, module, name)
            known = verdicts.get(name, {})
            if why_equivalent(module, diff) is not None or (
                known.get("diff") == diff and (known["killed"] or known["by"] == list(tests))
            ):
                continue
            if deadline is not None and time.monotonic() > deadline:
                return
            env = {
                **os.environ,
                "MUTANT_UNDER_TEST": name,
                "PYTHONPATH": f"{mutants / 'src'}{os.pathsep}{mutants}",
                "PYTHONDONTWRITEBYTECODE": "1",
            }
            command = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:randomly",
                       "-p", "no:xdist", "-p", "no:cacheprovider",
                       f"--timeout={group.test_timeout}", *tests]  # fmt: skip
            exit_code = subprocess.run(command, cwd=folder, env=env, capture_output=True).returncode
            # pytest: 1 a test failed; pytest-timeout's failure is a failed test too. Any
            # other code (an interrupted or empty run) proves nothing either way.
            if exit_code in (0, 1):
                verdicts[name] = {"diff": diff, "killed": exit_code == 1, "by": list(tests)}
                (folder / "wider.json").write_text(json.dumps(verdicts, indent=1) + "\n")
            print(
                f"   {name}: "
                + ("killed" if exit_code == 1 else f"exit {exit_code}")
                + f" by {len(tests)} wider tests"
            )


def _survivors(group: Group) -> list[str]:
    """The last run's survivors a new test may kill: not those explained as equivalent, nor
    those a wider test killed (each would re-run every test reaching its function)."""
    folder = STAGING / group.name
    wider = _wider_verdicts(group)
    names = []
    for module in group.modules:
        meta = folder / "mutants" / f"{module}.meta"
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        for name in (k for k, c in codes.items() if status_by_exit_code[c] in LEFT):
            diff = _diff(folder, module, name)
            known = wider.get(name, {})
            if why_equivalent(module, diff) is None and not (
                known.get("diff") == diff and known["killed"]
            ):
                names.append(name)
    return names


# A mutant counts as killed when a test failed, the run broke or it ran out of time.
KILLED = {"killed", "timeout", "caught by type check"}


def results(group: Group) -> dict[str, dict[str, object]]:
    """Per module: killed, equivalent, and the survivors with their diffs."""
    folder = STAGING / group.name
    by_module: dict[str, dict[str, object]] = {}
    for module in group.modules:
        meta = folder / "mutants" / f"{module}.meta"
        if not meta.exists():
            continue
        codes = json.loads(meta.read_text())["exit_code_by_key"]
        status = {name: status_by_exit_code[code] for name, code in codes.items()}
        wider = _wider_verdicts(group)
        killed = [k for k, s in status.items() if s in KILLED]
        timeouts = [k for k, s in status.items() if s == "timeout"]
        typed = [k for k, s in status.items() if s == "caught by type check"]
        pending = [k for k, s in status.items() if s == "not checked"]
        equivalent: dict[str, str] = {}
        log_only: dict[str, str] = {}
        survivors: dict[str, str] = {}
        for name in sorted(k for k, s in status.items() if s in LEFT):
            diff = _diff(folder, module, name)
            why = why_equivalent(module, diff)
            if why is not None:
                equivalent[name] = f"{diff}\n# {why}" if why else diff
            elif _log_line_only(folder, module, name):
                log_only[name] = diff
            elif wider.get(name, {}).get("diff") == diff and wider[name]["killed"]:
                killed.append(name)
            else:
                survivors[name] = f"[{status[name]}]\n{diff}"
        total = len(killed) + len(equivalent) + len(log_only) + len(survivors) + len(pending)
        tested = total - len(equivalent) - len(log_only) - len(pending)
        by_module[module.removeprefix("src/")] = {
            "mutants": total,
            "killed": len(killed),
            "of_which_timeouts": len(timeouts),
            "of_which_mypy": len(typed),  # refused by the type checker before any test ran
            "equivalent": equivalent,
            "log_lines_only": log_only,
            "survivors": survivors,
            "pending": len(pending),
            "score": round(100 * len(killed) / tested, 1) if tested else None,
            # Pending mutants count as not killed here: the score the target reads.
            "score_of_all": round(100 * len(killed) / (tested + len(pending)), 1)
            if tested + len(pending)
            else None,
        }
    return by_module


LEFT = {"survived", "suspicious", "no tests"}


def _diff(folder: Path, module: str, name: str) -> str:
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    cwd = Path.cwd()
    os.chdir(folder)
    try:
        diff = get_diff_for_mutant(name, path=Path(module))
    finally:
        os.chdir(cwd)
    return "\n".join(line for line in diff.splitlines()[2:] if line[:1] in "+-")


def _log_line_only(folder: Path, module: str, name: str) -> bool:
    """Whether the mutant changes nothing but a log line (tools/mutate/log_lines.py)."""
    import libcst as cst
    from mutmut.mutation.diff_apply import read_mutant_function, read_original_function

    mutated = _mutants_module(folder, module)
    original = cst.Module([]).code_for_node(read_original_function(mutated, name))
    mutant = cst.Module([]).code_for_node(read_mutant_function(mutated, name))
    return only_in_log_calls(original, mutant)


@functools.cache
def _mutants_module(folder: Path, module: str) -> Any:
    """mutmut's generated file of the module, parsed once a report."""
    import libcst as cst

    return cst.parse_module((folder / "mutants" / module).read_text())


def report(groups: tuple[Group, ...]) -> None:
    summary = json.loads(REPORT.read_text()) if REPORT.exists() else {}
    for group in groups:
        found = results(group)
        if found:
            summary[group.name] = found
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(summary, indent=2) + "\n")
    print(
        f"\n{'module':<46} {'mutants':>7} {'pending':>7} {'killed':>7} {'(mypy)':>7} "
        f"{'equiv.':>7} {'logs':>5} {'score':>7} {'of all':>7}"
    )
    for modules in summary.values():
        for module, row in modules.items():
            if not row["mutants"]:
                continue
            left = len(row["survivors"])
            print(
                f"{module:<46} {row['mutants']:>7} {row.get('pending', 0):>7} {row['killed']:>7} "
                f"{row.get('of_which_mypy', 0):>7} {len(row['equivalent']):>7} "
                f"{len(row.get('log_lines_only', ())):>5} "
                f"{_percent(row['score'])} {_percent(row.get('score_of_all'))}"
                + (f"  ({left} left: see {REPORT.relative_to(ROOT)})" if left else "")
            )


def _percent(score: float | None) -> str:
    return f"{score:>6}%" if score is not None else f"{'—':>7}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--group", action="append", choices=[g.name for g in GROUPS])
    parser.add_argument("--report", action="store_true", help="only print the last results")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--minutes", type=float, help="stop each group after this long (verdicts so far kept)"
    )
    parser.add_argument(
        "--only",
        action="append",
        help="only these mutants (mutmut's names; * matches anything), e.g. "
        "'agentworks.identity.tokens*': the costliest go last in a full run",
    )
    parser.add_argument(
        "--wider", action="store_true", help="only try the survivors on the wider tests"
    )
    parser.add_argument(
        "--recheck",
        nargs="+",
        metavar="TEST",
        help="only try the survivors (those --only names) on these tests, no mutmut run",
    )
    args = parser.parse_args()
    chosen = tuple(g for g in GROUPS if not args.group or g.name in args.group)
    if args.recheck:
        for group in chosen:
            try_wider(group, tests=tuple(args.recheck), only=args.only)
    elif args.wider:
        for group in chosen:
            if group.wider:
                try_wider(group, only=args.only)
    elif not args.report:
        for group in chosen:
            run_group(group, args.max_children, args.minutes, args.only)
    report(chosen)


if __name__ == "__main__":
    main()
