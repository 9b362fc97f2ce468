"""The core reads tool definitions itself: the schema text it indexes equals
:func:`toolsift.text.schema_text`, the default token costs equal
:func:`toolsift.default_token_count` of each definition, the JSON Lines it writes equal
``json.dumps`` (and :meth:`Tool.to_json`), and whatever it does not model exactly (subclasses,
custom mappings, huge integers, cycles) is left to the Python reference."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import struct
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolsift as ts
from toolsift import _core
from toolsift.registry import _is_default, json_lines
from toolsift.text import FIELDS, field_columns, field_params, schema_text, tool_fields

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))

nasty = st.text(
    st.sampled_from(list('ab Zé_"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029中💥\ufeff')), max_size=12
)  # fmt: skip
keys = nasty | st.sampled_from(
    ["properties", "items", "anyOf", "oneOf", "allOf", "title", "description", "enum", "$ref", "type"]
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.1, 1e16, 1e-05, -0.0, 1.5e300, 123.0, 5e-324])
    | nasty
)
schemas = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5),
    max_leaves=40,
)


def compact_bytes(definition: Any) -> int:
    return len(json.dumps(definition, ensure_ascii=False, separators=(",", ":")).encode())


def chain(depth: int) -> dict[str, Any]:
    """Properties nested ``depth`` levels, items and anyOf between them."""
    node: dict[str, Any] = {"description": "leaf", "enum": ["x", 1, 2.5, True, None]}
    for i in range(depth):
        node = {"properties": {f"p{i}": {"items": {"anyOf": [node, {"title": f"t{i}"}]}}}}
    return node


@SETTINGS
@given(schemas)
def test_the_cores_schema_text_equals_the_python_reference(schema: Any) -> None:
    for node in (schema, {"properties": schema}, {"properties": {"a": schema}, "items": [schema, schema]}):
        assert _core.schema_text(node) == schema_text(node)


@SETTINGS
@given(schemas, nasty, nasty)
def test_the_cores_definition_bytes_equal_the_compact_json(schema: Any, name: str, description: str) -> None:
    params = {"properties": schema}
    assert _core.definition_bytes([name], [description], [params]) == [
        compact_bytes({"name": name, "description": description, "parameters": params})
    ]


def test_nesting_bounds_and_refs_are_those_of_the_reference() -> None:
    for depth in range(8):
        assert _core.schema_text(chain(depth)) == schema_text(chain(depth))
    items: dict[str, Any] = {"properties": {"deep": {"description": "found"}}}
    for _ in range(20):  # items chains past the nesting bound
        items = {"items": items}
        assert _core.schema_text(items) == schema_text(items)
    ref = {"properties": {"a": {"$ref": "#/definitions/b"}}, "definitions": {"b": {"description": "hidden"}}}
    assert _core.schema_text(ref) == schema_text(ref) == "a"


class Odd(Mapping[str, Any]):
    """A mapping that is not a dict."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


class Text(str):
    pass


class Number(int):
    def __str__(self) -> str:
        return "forty-two"


UNMODELLED: list[Any] = [
    {"properties": Odd({"a": {"description": "odd mapping"}})},
    {"properties": {"a": {"enum": [Number(42), 2**80, Text("sub")]}}},
    {"properties": {"a": {"description": Text("a str subclass")}}},
    {"properties": {1: {"description": "an int key"}, None: {}}},
    {"properties": {"a": {"enum": [float("nan"), float("inf")]}}},
]


@pytest.mark.parametrize("schema", UNMODELLED)
def test_what_the_core_does_not_model_is_left_to_the_reference(schema: Any) -> None:
    text = _core.schema_text(schema)
    assert text is None or text == schema_text(schema)
    priced, measured = ts.Tool("t", "d", cost_tokens=3), ts.Tool("t", "d")
    for tool in (priced, measured):
        object.__setattr__(tool, "parameters", schema)  # what a mutated schema can hold
    idx = ts.Index([priced])
    assert idx._core.to_bytes() == _reference_core(idx, [priced]).to_bytes()
    try:
        want = ts.default_token_count(measured.definition())
    except TypeError:  # not JSON: the default counter refuses it; the index says which tool and field
        with pytest.raises(ts.errors.SchemaError, match="tool 't', field 'parameters'") as raised:
            ts.Index([measured])
        assert isinstance(raised.value.__cause__, TypeError)
    else:
        assert ts.Index([measured]).cost(0) == want


def test_a_cyclic_schema_is_measured_by_the_reference_which_refuses_it() -> None:
    tool = ts.Tool("t", "d", {"properties": {"a": {}}})
    tool.parameters["properties"]["a"]["items"] = tool.parameters  # type: ignore[index]
    assert _core.definition_bytes(["t"], ["d"], [tool.parameters]) == [None]
    assert _core.schema_text(tool.parameters) == schema_text(tool.parameters)
    with pytest.raises(ValueError, match="ircular"):
        ts.Index([tool])


def _reference_core(idx: ts.Index, tools: list[ts.Tool]) -> Any:
    """A core index built from the Python reference texts, with ``idx``'s costs."""
    columns = [list(c) for c in zip(*(tool_fields(t) for t in tools), strict=True)]
    weights, bs = field_params(None, None)
    costs = [idx.cost(i) for i in range(len(tools))]
    return _core.Index(columns, weights, bs, [list(t.permissions) for t in tools], costs, [t.core for t in tools])


def test_the_botocore_catalog_indexes_and_costs_exactly_as_the_reference() -> None:
    pytest.importorskip("botocore")
    from toolsift.catalogs import aws_catalog

    tools = list(aws_catalog())
    idx = ts.Index(tools)
    assert [idx.cost(i) for i in range(len(tools))] == [ts.default_token_count(t.definition()) for t in tools]
    assert [_core.schema_text(t.parameters) for t in tools] == [schema_text(t.parameters) for t in tools]
    assert idx._core.to_bytes() == _reference_core(idx, tools).to_bytes()


def test_the_columns_the_core_gets_are_the_reference_texts_but_the_schema() -> None:
    tools = [ts.Tool("a", "b", {"properties": {"x": {"title": "y"}}}, examples=["e1", "e2"], search_text="s")]
    columns = field_columns(tools, {"a": "learned words"})
    assert len(columns) == len(FIELDS)
    texts = tool_fields(tools[0], "learned words")
    assert [c[0] for c in columns] == [texts[0], texts[1], tools[0].parameters, *texts[3:]]
    assert texts[5] == "learned words" and field_columns(tools)[5] == [""]


json_values = st.recursive(
    scalars | st.sampled_from([float("nan"), float("inf"), -float("inf"), 2**70, -(2**64)]),
    lambda inner: (
        st.lists(inner, max_size=4) | st.lists(inner, max_size=3).map(tuple) | st.dictionaries(keys, inner, max_size=5)
    ),
    max_leaves=40,
)


def dumps_lines(values: list[Any]) -> bytes:
    """The reference: JSON only (NaN and infinities refused, as a file toolsift reads back)."""
    return b"".join(json.dumps(v, ensure_ascii=False, allow_nan=False).encode() + b"\n" for v in values)


@SETTINGS
@given(st.lists(json_values, max_size=5))
def test_the_cores_json_lines_equal_json_dumps(values: list[Any]) -> None:
    try:
        want = dumps_lines(values)
    except ValueError:  # NaN or an infinity
        with pytest.raises(ValueError):
            _core.json_lines(values)
        return
    blob, offsets = _core.json_lines(values)
    assert blob == want
    assert offsets == [0, *itertools.accumulate(len(dumps_lines([v])) for v in values)]


@pytest.mark.parametrize(
    "value",
    [{1: "int key", "a": 2}, {Text("k"): Text("v")}, [Number(7)], {"a": Odd({"b": 1})}, {None: 1}],
)
def test_json_lines_leave_what_they_do_not_model_to_json_dumps(value: Any) -> None:
    try:
        want = dumps_lines([value])
    except TypeError:
        with pytest.raises(TypeError):
            _core.json_lines([value])
    else:
        assert _core.json_lines([value])[0] == want


def test_json_lines_of_a_cycle_raise_as_json_dumps_does() -> None:
    cycle: list[Any] = []
    cycle.append(cycle)
    with pytest.raises(ValueError, match="ircular"):
        _core.json_lines([cycle])


def reference_to_json(tool: ts.Tool) -> str:
    """``Tool.to_json`` as it was written first, through ``dataclasses.asdict``."""
    defaults = {f.name: f.default for f in dataclasses.fields(ts.Tool)}
    out = {k: v for k, v in dataclasses.asdict(tool).items() if k == "name" or not _is_default(v, defaults[k])}
    for key in ("permissions", "examples"):
        if key in out:
            out[key] = list(out[key])
    return json.dumps(out, ensure_ascii=False)


NASTY_TOOLS = [
    ts.Tool("plain"),
    ts.Tool("empty_schema_given", "", {"type": "object", "properties": {}}),
    ts.Tool(
        "everything",
        'quote " backslash \\ nl \n tab \t nul \x00 \x1f \u2028 中 💥',
        {"properties": {"z": {"enum": [1, 2.5, -0.0, 1e16, True, None, "x"]}, "a": {"type": "string"}}},
        permissions=["b.write", "a.read"],
        core=True,
        examples=["one", "two"],
        search_text="sé",
        cost_tokens=0,
        annotations={"readOnlyHint": True, "title": "T"},
    ),
    ts.Tool("cost_only", cost_tokens=2**32 - 1),
]


def test_to_json_and_json_lines_write_what_the_first_to_json_wrote(tmp_path: Path) -> None:
    tools = list(NASTY_TOOLS)
    with contextlib.suppress(ImportError):
        from toolsift.catalogs import aws_catalog

        tools += list(aws_catalog())[::7]
    want = [reference_to_json(t) for t in tools]
    assert [t.to_json() for t in tools] == want
    pieces = list(json_lines(tools, step=5))
    assert b"".join(p for p, _ in pieces) == "".join(w + "\n" for w in want).encode()
    ts.Catalog(tools).save(tmp_path / "c.jsonl")
    assert (tmp_path / "c.jsonl").read_bytes() == "".join(w + "\n" for w in want).encode()


@SETTINGS
@given(st.binary(max_size=300), st.integers(0, 2**32 - 1))
def test_the_cores_crc32_is_zlibs(data: bytes, value: int) -> None:
    assert _core.crc32(data) == zlib.crc32(data)
    assert _core.crc32(data, value) == zlib.crc32(data, value)


@SETTINGS
@given(st.lists(st.binary(max_size=40), max_size=8))
def test_the_cores_crc32_of_each_piece_is_zlibs(pieces: list[bytes]) -> None:
    data, cuts = b"".join(pieces), [0, *itertools.accumulate(map(len, pieces))]
    want = struct.pack(f"<{len(pieces)}I", *map(zlib.crc32, pieces))
    assert _core.crc32_each(data, cuts) == want
    for bad in ([0, len(data) + 1], [3, 1]):
        with pytest.raises(ts.errors.InvalidParameterError):
            _core.crc32_each(data, bad)
