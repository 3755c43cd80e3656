"""An autouse fixture that checks, after each test on the moto stack, that every AWS call
its handlers made is allowed by their roles in the translated template (the same check as
tests/integration/test_iam_coverage.py, over every integration test).

A test is failed at teardown, naming the call and the permission it lacks; it works per
test, so it needs no cross-worker collection under pytest-xdist.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.aws_calls import AwsCall, CallRecorder, permissions_for
from tests.support.iam import allowed, role_of_function, role_statements, stack_resolver
from tests.support.sam import translated_template


def denials(calls: list[AwsCall], resources: Any) -> list[str]:
    """Each recorded call's missing permissions, as "<call> needs <action> on <resource>"."""
    translated = translated_template()
    resolve = stack_resolver(translated, resources)
    statements: dict[str, Any] = {}
    denied = set()
    for call in calls:
        if call.function not in statements:
            statements[call.function] = role_statements(
                translated, role_of_function(translated, call.function), resolve
            )
        for permission in permissions_for(call):
            if not allowed(statements[call.function], permission):
                denied.add(f"{call} needs {permission.action} on {permission.resource}")
    return sorted(denied)


@pytest.fixture(autouse=True)
def iam_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    if "stack" not in request.fixturenames:
        yield
        return
    stack = request.getfixturevalue("stack")
    recorder = CallRecorder()
    with recorder.recording():
        yield
    missing = denials(recorder.calls, stack.resources)
    if missing:
        pytest.fail("AWS calls the template's roles do not allow:\n" + "\n".join(missing))
