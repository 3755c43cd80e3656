"""Browser tests (C5): the web Inbox and Runs pages in headless Chromium (Debian's
`chromium`), driven by Playwright's Python package pointed at that executable, against the
real local stack. Without Chromium (or Playwright) every test here is skipped, never failed,
with the reason as its skip line (`make test` also prints it once, before pytest starts);
`.ci/run` installs both."""

from __future__ import annotations

import importlib.util
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import LocalStack, start_local_stack

ROOT = Path(__file__).resolve().parents[2]
# Screenshots of each page, kept as test artifacts (git-ignored).
ARTIFACTS = ROOT / "test-artifacts" / "browser"
SKIPPED = "browser tests skipped: no chromium on PATH — apt-get install chromium"


def missing() -> str | None:
    """Why the browser tests can't run here (None when they can)."""
    if shutil.which("chromium") is None:
        return SKIPPED
    if importlib.util.find_spec("playwright") is None:
        return "browser tests skipped: no playwright package — pip install -e '.[dev]'"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = missing()
    if reason is None:
        return
    for item in items:
        if "tests/browser/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(scope="module")
def local_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalStack]:
    stack = start_local_stack(tmp_path_factory.mktemp("browser-stack"))
    try:
        yield stack
    finally:
        if stack.running:
            code = stack.stop()
            assert code == 0, f"`agentworks dev` exited {code} on SIGINT:\n{stack.stderr()[-4000:]}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=shutil.which("chromium"), args=["--no-sandbox"], headless=True
        )
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Any:
    """shots(page, "inbox") saves test-artifacts/browser/<test>-<n>-inbox.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    taken: list[Path] = []

    def shot(page: Any, name: str) -> Path:
        path = ARTIFACTS / f"{request.node.name}-{len(taken) + 1:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        taken.append(path)
        return path

    return shot
