"""JSON Schema checks of function inputs and results (F3, F6), with the failing path.

fastjsonschema compiles each schema once per process (it is what powertools' validation
uses); a schema that doesn't compile is refused when the Crew is defined, not at call time.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import fastjsonschema


class SchemaProblem(Exception):
    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.message = message
        self.path = path


@lru_cache(maxsize=256)
def _compiled(schema_json: str) -> Callable[[Any], Any]:
    return fastjsonschema.compile(json.loads(schema_json))


def schema_error(schema: dict[str, Any]) -> str | None:
    """Why `schema` is not a usable JSON Schema, or None."""
    try:
        _compiled(json.dumps(schema, sort_keys=True))
    except (fastjsonschema.JsonSchemaDefinitionException, TypeError, ValueError) as error:
        return str(error) or "invalid JSON Schema"
    return None


def check(schema: dict[str, Any], value: Any) -> None:
    """Raises SchemaProblem naming the failing path (e.g. `args.text`)."""
    validate = _compiled(json.dumps(schema, sort_keys=True))
    try:
        validate(value)
    except fastjsonschema.JsonSchemaValueException as error:
        path = ".".join(str(p) for p in (error.path or ["data"]))
        raise SchemaProblem(error.message, path) from None
