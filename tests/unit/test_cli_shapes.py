"""The CLI reads answers with the server's own response models (issue: OpenAPI tells the
truth): each shape the CLI names is a pydantic model that the OpenAPI document says an
operation answers with, so a renamed field breaks the CLI's tests as well as the API's."""

from __future__ import annotations

import json

from pydantic import BaseModel

from agentworks.http_api.app import app
from agentworks.http_api.openapi import openapi_json
from agentworks_cli import shapes


def _response_schemas() -> set[str]:
    document = json.loads(openapi_json(app))
    names = set()
    for item in document["paths"].values():
        for operation in item.values():
            for code, answer in operation["responses"].items():
                if code.startswith("2"):
                    ref = answer["content"]["application/json"]["schema"]["$ref"]
                    names.add(ref.rsplit("/", 1)[-1])
    return names


def test_every_cli_shape_is_a_response_model_of_the_api():
    answered = _response_schemas()
    assert len(shapes.ALL) >= 20
    for shape in shapes.ALL:
        model = shape.model()
        assert issubclass(model, BaseModel), shape
        assert shape.name in answered, f"no operation answers with {shape.name}"


def test_every_json_answer_of_the_api_is_typed():
    document = json.loads(openapi_json(app))
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for code, answer in operation["responses"].items():
                schema = answer["content"]["application/json"]["schema"]
                assert "$ref" in schema, f"{method.upper()} {path} {code} answers an untyped body"
