"""`python -m deploycheck [--template PATH]`: every check of the deploy gate, in order;
exit 1 when any fails (0 when all pass). `make check-deploy` installs the tools first."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deploycheck import asl, build, cycles, deploy_config, limits, lint, sizes, statemachines
from deploycheck.limits import Measure
from deploycheck.template import TranslationError, load, translate

FIGURES = Path(".aws-sam/check-deploy.json")  # what `make bench` reports without a build


class Report:
    def __init__(self) -> None:
        self.failed: list[str] = []
        self.figures: dict[str, float] = {}

    def section(self, title: str, run: Callable[[], list[str]]) -> None:
        started = time.monotonic()
        print(f"== {title}", flush=True)
        failures = run()
        for line in failures:
            print(f"       {line}" if line.startswith(" ") else f"  FAIL {line}")
        if failures:
            self.failed.append(title)
        print(f"  ({time.monotonic() - started:.1f} s)", flush=True)

    def measures(self, found: list[Measure]) -> list[str]:
        for measure in found:
            print(f"  {measure}")
        return [str(m) for m in found if m.over]


def _lint(source: Path, translated: dict[str, Any], root: Path) -> list[str]:
    return lint.lint(source, translated, root)


def _cycles(translated: dict[str, Any]) -> list[str]:
    found = cycles.find(translated)
    if not found:
        print(f"  no cycle among {len(translated['Resources'])} resources")
    return [line for component in found for line in cycles.describe(component)]


def _limits(report: Report, translated: dict[str, Any], source: Path, root: Path) -> list[str]:
    source_bytes = source.stat().st_size
    found = limits.template_measures(translated, source_bytes) + limits.resource_measures(
        translated
    )
    failures = report.measures(found)
    print(f"  {deploy_config.describe(root, source_bytes)}")
    policies = limits.role_policy_chars(translated)
    largest = max(policies, key=lambda role: policies[role])
    print(f"  largest role inline policy: {largest}, {policies[largest]:,} characters")
    report.figures.update(
        {
            "deploy_resources": float(len(translated["Resources"])),
            "deploy_template_bytes": float(source_bytes),
            "deploy_translated_bytes": float(len(json.dumps(translated, separators=(",", ":")))),
            "deploy_largest_role_policy_chars": float(policies[largest]),
        }
    )
    stack = deploy_config.stack_name(root)
    names = deploy_config.name_problems(load(source), stack)
    return failures + deploy_config.problems(root, source_bytes) + names


def _state_machines(report: Report, template: dict[str, Any], root: Path) -> list[str]:
    found = statemachines.definitions(template, root)
    failures = report.measures(
        [
            Measure(f"{d.logical_id} definition", d.size, statemachines.MAX_DEFINITION_BYTES, "B")
            for d in found
        ]
    )
    for verdict in asl.validate(found, root):
        print(
            f"  {'valid' if verdict.valid else 'INVALID':7} {verdict.logical_id} ({verdict.source})"
        )
        if not verdict.valid:
            failures.append(f"{verdict.logical_id}: {verdict.detail}")
    return failures


def _build(report: Report, template: dict[str, Any], source: Path, root: Path) -> list[str]:
    # Another template is built aside: .aws-sam/build stays what `sam deploy` should ship.
    own = source.resolve() == (root / "template.yaml").resolve()
    build_dir = root / (build.BUILD_DIR if own else build.OTHER_BUILD_DIR)
    built, output = build.build(source, root, build_dir)
    if not built:
        return ["sam build failed:", *(f"  {line}" for line in output.splitlines()[-30:])]
    found = sizes.measures(template, build_dir)
    layers = [m for m in found if m.what.endswith(" zipped")]
    if layers:
        report.figures["deploy_layer_zip_bytes"] = float(max(m.value for m in layers))
    unzipped = [m.value for m in found if m.what.endswith(" unzipped")]
    if unzipped:
        report.figures["deploy_largest_function_unzipped_bytes"] = float(max(unzipped))
    return report.measures(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deploycheck", description=__doc__)
    parser.add_argument("--template", type=Path, default=Path("template.yaml"))
    parser.add_argument("--root", type=Path, default=Path("."), help="the project's root")
    args = parser.parse_args(argv)
    source, root = args.template, args.root
    started = time.monotonic()
    template = load(source)
    try:
        translated = translate(template)
    except TranslationError as e:
        print("== SAM transform\n" + "\n".join(f"  FAIL {m}" for m in e.args))
        return 1
    report = Report()
    report.section("cfn-lint (source and translated)", lambda: _lint(source, translated, root))
    report.section("dependency cycles (translated)", lambda: _cycles(translated))
    report.section("limits", lambda: _limits(report, translated, source, root))
    report.section(
        "state machines (asl-validator)", lambda: _state_machines(report, template, root)
    )
    report.section("sam build and sizes", lambda: _build(report, template, source, root))
    elapsed = time.monotonic() - started
    if source.resolve() == (root / "template.yaml").resolve():  # the bench's figures
        (root / FIGURES).parent.mkdir(parents=True, exist_ok=True)
        (root / FIGURES).write_text(json.dumps(report.figures, indent=1))
    if report.failed:
        print(f"check-deploy FAILED ({', '.join(report.failed)}) in {elapsed:.0f} s")
        return 1
    print(f"check-deploy passed in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
