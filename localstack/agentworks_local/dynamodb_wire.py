"""DynamoDB's JSON wire format at a cost in proportion to the data.

moto (pinned 5.2.5) turns every response into JSON with a generic serializer that, for each
value of each returned item, looks the member up through half a dozen alias rules and
dispatches on the botocore shape by name; requests are parsed by the same kind of walk. For
a page of items that is most of the cost of a local DynamoDB call.

Here each operation's output (and input) shape is compiled once into plain functions that
do what moto's serializer (parser) does for the values DynamoDB's handler produces (dicts,
strings, numbers, bytes), with the same output, key order included, so the bytes on the wire
are moto's own. Whatever the compiled code is not sure to reproduce exactly (errors, other
operations, a value of an unexpected type, a key that moto's alias rules could pick up, a
shape trait it does not model) raises ``_Unsupported`` and takes moto's own code instead.
Headers, request id and CRC32 are left to moto's call_action and its ``amz_crc32`` wrapper,
which run unchanged around the overridden step.

``enabled`` switches the fast path off at run time (the differential tests use it).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from enum import Enum
from typing import Any

from botocore import xform_name

enabled = True

#: The data-plane operations; everything else (control plane, PartiQL) keeps moto's code.
OPERATIONS = frozenset(
    {
        "GetItem",
        "Query",
        "Scan",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
    }
)

Codec = Callable[[Any], Any]

_encoders: dict[str, Codec | None] = {}
_decoders: dict[str, Codec | None] = {}


class _Unsupported(Exception):
    """The value is outside what the compiled code reproduces exactly; moto's code takes it."""


def _unsupported(_: Any) -> Any:
    raise _Unsupported


class _Compiler:
    """Compiles a service's shapes into functions, once per shape (shapes are recursive)."""

    def __init__(self, scalars: dict[str, Codec], for_input: bool) -> None:
        self._scalars = scalars
        self._for_input = for_input
        self._done: dict[str, Codec] = {}

    def codec(self, shape: Any) -> Codec:
        if shape.serialization or getattr(shape, "is_document_type", False):
            # Renamed members, locations, flattening, documents: not modelled here.
            return _unsupported
        name = shape.name
        if name in self._done:
            return self._done[name]
        cell: list[Codec] = []
        self._done[name] = lambda value: cell[0](value)  # filled in below
        kind = shape.type_name
        if kind == "structure":
            built = self._structure(shape)
        elif kind == "list":
            built = self._list(self.codec(shape.member))
        elif kind == "map":
            built = self._map(self.codec(shape.value))
        else:
            built = self._scalars.get(kind, _unsupported)
        cell.append(built)
        self._done[name] = built
        return built

    def _structure(self, shape: Any) -> Codec:
        members = shape.members
        codecs = {name: self.codec(member) for name, member in members.items()}
        order = list(codecs.items())
        names = set(codecs)
        aliases = set() if self._for_input else _alias_keys(shape)
        if aliases & names:
            return _unsupported
        blocked = frozenset(aliases)

        def structure(value: Any) -> Any:
            if type(value) is not dict:
                raise _Unsupported
            if not blocked.isdisjoint(value):
                raise _Unsupported
            out: dict[str, Any] = {}
            if len(value) == 1:
                # An AttributeValue: one key, no order to keep.
                for key, member in value.items():
                    if key in names and member is not None:
                        out[key] = codecs[key](member)
                return out
            for key, codec in order:
                member = value.get(key)
                if member is not None:
                    out[key] = codec(member)
            return out

        return structure

    @staticmethod
    def _list(member: Codec) -> Codec:
        def listing(value: Any) -> Any:
            if type(value) is not list:
                raise _Unsupported
            out = []
            for item in value:
                if item is None:
                    raise _Unsupported
                out.append(member(item))
            return out

        return listing

    @staticmethod
    def _map(member: Codec) -> Codec:
        def mapping(value: Any) -> Any:
            if type(value) is not dict:
                raise _Unsupported
            out = {}
            for key, item in value.items():
                if item is None or not key:
                    # moto writes the members of a value under an empty key into the map
                    # itself (its "no key" means "top level"); boto3 then fails to parse.
                    raise _Unsupported
                out[key] = member(item)
            return out

        return mapping


def _alias_keys(shape: Any) -> set[str]:
    """Keys moto's XFormedAttributePicker could read for a member of ``shape`` on a dict.

    The member's own name is the first that a dict without these keys can answer, so a
    dict holding none of them reads exactly its member names (moto/core/serialize.py).
    """
    members = shape.members
    keys: set[str] = set()
    for name, member in members.items():
        candidates = [xform_name(name)]
        named = member.type_name in ("list", "structure") and member.name != name
        if named and member.name not in members:
            candidates.append(member.name)  # ShapeNameAlias
        if name.lower().startswith(shape.name.lower()):
            short = name[len(shape.name) :]
            if short not in members:
                candidates.append(short)  # ShapePrefixAlias
        if name.lower().startswith("dict"):
            candidates.append(name[len("dict") :])  # ClassPrefixAlias, for a dict
        for candidate in candidates:
            keys.add(candidate)
            keys.add(xform_name(candidate))
    return keys


def _out_string(value: Any) -> Any:
    if type(value) is str:
        return value
    if isinstance(value, Enum):
        value = value.value
    return str(value) if value not in [None, {}, []] else value


def _out_blob(value: Any) -> str:
    if isinstance(value, str):
        value = value.encode("utf-8")
    if not isinstance(value, bytes):
        raise _Unsupported
    return base64.b64encode(value).strip().decode("utf-8")


def _out_integer(value: Any) -> int:
    return int(value)


def _out_float(value: Any) -> float:
    return float(value)


def _same(value: Any) -> Any:
    return value


_OUTPUT_SCALARS: dict[str, Codec] = {
    "string": _out_string,
    "blob": _out_blob,
    "integer": _out_integer,
    "long": _out_integer,
    "float": _out_float,
    "double": _out_float,
    "boolean": _same,
}


def _in_blob(value: Any) -> bytes:
    if not isinstance(value, str):
        raise _Unsupported
    return base64.b64decode(value)


def _in_integer(value: Any) -> int:
    if type(value) is not int:
        raise _Unsupported
    return value


def _in_float(value: Any) -> float:
    if type(value) not in (int, float):
        raise _Unsupported
    return float(value)


_INPUT_SCALARS: dict[str, Codec] = {
    "string": _same,
    "boolean": _same,
    "blob": _in_blob,
    "integer": _in_integer,
    "long": _in_integer,
    "float": _in_float,
    "double": _in_float,
}


def _compiled(cache: dict[str, Codec | None], action: str, for_input: bool) -> Codec | None:
    if action in cache:
        return cache[action]
    from moto.core.utils import get_service_model

    codec: Codec | None = None
    if action in OPERATIONS:
        service_model = get_service_model("dynamodb")
        operation = service_model.operation_model(action)
        shape = operation.input_shape if for_input else operation.output_shape
        if shape is not None and shape.type_name == "structure":
            scalars = _INPUT_SCALARS if for_input else _OUTPUT_SCALARS
            codec = _Compiler(scalars, for_input).codec(shape)
    cache[action] = codec
    return codec


def _content_type() -> str:
    from moto.core.utils import get_service_model

    service_model = get_service_model("dynamodb")
    version = service_model.metadata.get("jsonVersion", "1.0")
    return f"application/x-amz-json-{version}"


def _serialized(self: Any, action_result: Any) -> Any:
    """BaseResponse.serialized for a successful data-plane result; moto's for the rest."""
    from moto import settings
    from moto.core.responses import ActionResult, BaseResponse
    from moto.core.serialize import JSONSerializer, get_serializer_class
    from moto.core.utils import get_service_model
    from moto.dynamodb.responses import DynamoResult

    result = action_result.result
    if (
        not enabled
        or type(action_result) not in (ActionResult, DynamoResult)
        or type(result) is not dict
        or self.RESPONSE_KEY_PATH_TO_TRANSFORMER  # moto's per-path response rewrites
    ):
        return BaseResponse.serialized(self, action_result)
    action = self._get_action()
    encode = _compiled(_encoders, action, for_input=False)
    if encode is None:
        return BaseResponse.serialized(self, action_result)
    service_model = get_service_model(self.boto3_service_name)
    protocol = self.determine_response_protocol(service_model)
    if get_serializer_class(service_model.service_name, protocol) is not JSONSerializer:
        return BaseResponse.serialized(self, action_result)
    try:
        payload = encode(result)
    except Exception:  # moto's serializer decides, and raises its own error
        return BaseResponse.serialized(self, action_result)
    body = json.dumps(payload, indent=4 if settings.PRETTIFY_RESPONSES else None)
    status = service_model.operation_model(action).http.get("responseCode", 200)
    headers = {"Content-Type": _content_type()}
    headers.update(self.response_headers)
    return status, headers, body


def _parse_parameters(self: Any, request: Any) -> None:
    """BaseResponse.parse_parameters for a data-plane JSON request; moto's for the rest."""
    from moto.core.parse import PROTOCOL_PARSERS, JSONParser
    from moto.core.request import determine_request_protocol
    from moto.core.responses import BaseResponse
    from moto.core.utils import get_service_model

    if not enabled or self.PROTOCOL_PARSER_MAP_TYPE is not dict:
        return BaseResponse.parse_parameters(self, request)
    decode = _compiled(_decoders, self._get_action(), for_input=True)
    if decode is None:
        return BaseResponse.parse_parameters(self, request)
    service_model = get_service_model(self.boto3_service_name)
    protocol = determine_request_protocol(service_model, request.content_type)
    if PROTOCOL_PARSERS.get(protocol) is not JSONParser:
        return BaseResponse.parse_parameters(self, request)
    raw = request.data
    try:
        self.params = decode(json.loads(raw.decode("utf-8")) if raw else {})
    except Exception:  # moto's parser decides, and raises its own error
        return BaseResponse.parse_parameters(self, request)
    return None


def install() -> None:
    """Route DynamoDB's serializer and parser through the compiled codecs (idempotent)."""
    from moto.dynamodb.responses import DynamoHandler

    DynamoHandler.serialized = _serialized  # type: ignore[method-assign]
    DynamoHandler.parse_parameters = _parse_parameters  # type: ignore[method-assign]


def uninstall() -> None:
    """Give DynamoDB back moto's own (inherited) serializer and parser."""
    from moto.dynamodb.responses import DynamoHandler

    for name in ("serialized", "parse_parameters"):
        if name in vars(DynamoHandler):
            delattr(DynamoHandler, name)
