"""Bad input of every kind ends in one exact ``toolsift.errors`` class, naming the tool and field
for a tool's input: never a bare TypeError, UnicodeEncodeError, ValueError or RecursionError, at
definition time or later (indexing, emitting, saving)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolsift as ts
from toolsift.errors import (
    CatalogFormatError,
    InvalidParameterError,
    InvalidToolError,
    InvalidToolTypeError,
    SchemaError,
    StoreFormatError,
)

LONE = "\ud83d"  # the first half of an emoji, cut off
DEEP = 100_000
HUGE = 10**5000  # past Python's 4,300-digit int-to-str limit


def deep_list(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def deep_object(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"type": "object"}
    for _ in range(levels - 1):
        value = {"type": "object", "properties": {"x": value}}
    return value


def tool(**fields: Any) -> Callable[[], Any]:
    """Making a tool and using it everywhere a tool goes: index, emitters, its JSON, a catalog file."""

    def make() -> None:
        made = ts.Tool(fields.pop("name", "t"), **fields)
        ts.Index([made]).select("t")
        ts.to_mcp([made]), ts.to_openai([made]), made.to_json()

    return make


INDEX = ts.Index([ts.Tool("a", "refund an order"), ts.Tool("b", "ship it", permissions=["p"])])
TIERED = ts.Toolbox(ts.Catalog([ts.Tool("a", "refund an order")]), tiers=ts.ToolTierOptions())

TOOL_CASES = [
    ("surrogate in name", tool(name="a" + LONE), InvalidToolError, "name"),
    ("surrogate in description", tool(description=LONE), InvalidToolError, "description"),
    ("surrogate in search_text", tool(search_text="x" + LONE), InvalidToolError, "search_text"),
    ("surrogate in examples", tool(examples=["ok", LONE]), InvalidToolError, "examples"),
    ("surrogate in permissions", tool(permissions=[LONE]), InvalidToolError, "permissions"),
    ("surrogate in a schema string", tool(parameters={"type": "object", "description": LONE}), SchemaError,
     "parameters"),
    ("surrogate in a schema key", tool(parameters={"type": "object", "properties": {LONE: {}}}), SchemaError,
     "parameters"),
    ("surrogate in annotations", tool(annotations={"title": LONE}), InvalidToolError, "annotations"),
    ("surrogate in an annotation key", tool(annotations={LONE: True}), InvalidToolError, "annotations"),
    ("deep parameters", tool(parameters=deep_object(DEEP)), SchemaError, "parameters"),
    ("deep annotations", tool(annotations={"x": deep_list(DEEP)}), InvalidToolError, "annotations"),
    ("deep examples", tool(examples=[deep_list(DEEP)]), InvalidToolTypeError, "examples"),
    ("huge int in parameters", tool(parameters={"type": "object", "default": HUGE}), SchemaError, "parameters"),
    ("huge int in annotations", tool(annotations={"x": HUGE}), InvalidToolError, "annotations"),
    ("NaN annotation", tool(annotations={"x": float("nan")}), InvalidToolError, "annotations"),
    ("object annotation", tool(annotations={"x": object()}), InvalidToolError, "annotations"),
    ("annotations not an object", tool(annotations=[1]), InvalidToolTypeError, "annotations"),
    ("deep MCP inputSchema", lambda: ts.Catalog.from_mcp([{"name": "t", "inputSchema": deep_object(DEEP)}]),
     SchemaError, "parameters"),
    # JSON would make the key 1 the string "1" (one property silently lost) and None "null"
    ("an int key beside its string", tool(parameters={"type": "object", "properties": {1: {}, "1": {}}}),
     SchemaError, "parameters"),
    ("a None key in a schema", tool(parameters={"type": "object", "properties": {None: {}}}), SchemaError,
     "parameters"),
    ("an int key in an MCP item", lambda: ts.Catalog.from_mcp([{"name": "t", "inputSchema": {}, 7: 1}]),
     CatalogFormatError, "7"),
    ("an int key in an OpenAI function",
     lambda: ts.Catalog.from_openai([{"type": "function", "function": {"name": "t", 5: "x"}}]),
     CatalogFormatError, "5"),
    ("a None key in an MCP item", lambda: ts.Catalog.from_mcp([{"name": "t", "inputSchema": {}, None: 1}]),
     CatalogFormatError, "None"),
    ("an int key in an Anthropic item", lambda: ts.Catalog.from_anthropic([{"name": "t", "input_schema": {}, 7: 1}]),
     CatalogFormatError, "7"),
]  # fmt: skip

PARAMETER_CASES = [
    ("surrogate query to search", lambda: INDEX.search(LONE)),
    ("surrogate query to select", lambda: INDEX.select("refund " + LONE)),
    ("surrogate query to search_many", lambda: INDEX.search_many(["refund", LONE])),
    ("surrogate query to select_many", lambda: INDEX.select_many(["refund", LONE])),
    ("surrogate query piece", lambda: INDEX.search(ts.Query(((LONE, 1.0),)))),
    ("surrogate query, per-caller statistics", lambda: ts.Index(INDEX._tools, statistics="caller").search(LONE)),
    ("surrogate in tool_search", lambda: TIERED.call("tool_search", {"query": LONE})),
    ("surrogate permission of a caller", lambda: INDEX.search("refund", caller=["p", LONE])),
    ("caller=5", lambda: INDEX.search("refund", caller=5)),  # type: ignore[arg-type]
    ("a mapping caller, which would grant what it marks False", lambda: INDEX.search("r", caller={"p": False})),
    ("a mapping caller to select", lambda: INDEX.select("refund", caller={"billing.refund": False})),
    ("caller=5 to select", lambda: INDEX.select("refund", caller=5.0)),  # type: ignore[arg-type]
    ("Index.get of a list", lambda: INDEX.get(["a"])),  # type: ignore[arg-type]
    ("Index.allows of a list", lambda: INDEX.allows(["a"], caller=None)),  # type: ignore[arg-type]
    ("Catalog.get of a list", lambda: ts.Catalog().get(["a"])),  # type: ignore[arg-type]
    ("Catalog.position of a dict", lambda: ts.Catalog().position({})),  # type: ignore[arg-type]
    ("tool_search arguments not an object", lambda: TIERED.call("tool_search", "x")),  # type: ignore[arg-type]
    ("tool arguments not an object", lambda: TIERED.call("a", ["x"])),  # type: ignore[arg-type]
    ("a tool name that is not a string", lambda: TIERED.call(["a"], {})),  # type: ignore[arg-type]
    ("UsageStore half_life_s='x'", lambda: ts.UsageStore(half_life_s="x")),  # type: ignore[arg-type]
    ("k1 past the largest float", lambda: ts.Index(INDEX._tools, k1=10**400)),
    ("alpha past the largest float", lambda: ts.Index(INDEX._tools, alpha=10**400)),
    ("Index.cost of -1", lambda: INDEX.cost(-1)),
    ("Index.cost past the end", lambda: INDEX.cost(len(INDEX))),
    ("Index.cost of 2**40", lambda: INDEX.cost(2**40)),
    ("Index.cost of a string", lambda: INDEX.cost("0")),  # type: ignore[arg-type]
    ("Index.tool of -1 (not the last tool)", lambda: INDEX.tool(-1)),
    ("Index.name past the end", lambda: INDEX.name(len(INDEX))),
    ("Index.tool of True", lambda: INDEX.tool(True)),
    ("b as a string", lambda: ts.Index(INDEX._tools, b="0.5")),  # type: ignore[arg-type]
    ("field_weights as a list", lambda: ts.Index(INDEX._tools, field_weights=[1.0])),  # type: ignore[arg-type]
    ("b as an empty list, once ignored", lambda: ts.Index(INDEX._tools, b=[])),  # type: ignore[arg-type]
    ("a rerank hook that is no function", lambda: ts.Index(INDEX._tools, rerank=5)),  # type: ignore[arg-type]
    ("an embedder without embed()", lambda: ts.Index(INDEX._tools, embedder=5)),  # type: ignore[arg-type]
    ("a learned store that is none", lambda: ts.Toolbox(ts.Catalog(INDEX._tools), learned=5)),  # type: ignore[arg-type]
    ("a query weight past the largest float", lambda: ts.Query((("refund", 10**400),))),
    ("half_life_s past the largest float", lambda: ts.UsageStore(half_life_s=10**400)),
    ("Learned half_life_s past the largest float", lambda: ts.Learned(half_life_s=10**400)),
    ("recent_tools=None", lambda: ts.Query.from_messages([{"role": "user", "content": "x"}], recent_tools=None)),  # type: ignore[arg-type]
    ("tokenize of a lone surrogate", lambda: ts.tokenize(LONE)),
    ("tokenize of a number", lambda: ts.tokenize(5)),  # type: ignore[arg-type]
    ("to_openai of a dict", lambda: ts.to_openai([{"name": "a"}])),  # type: ignore[list-item]
    ("to_mcp of None", lambda: ts.to_mcp(None)),  # type: ignore[arg-type]
    ("tool_references of names", lambda: ts.tool_references("ab")),  # type: ignore[arg-type]
    ("Index.save to an empty path", lambda: INDEX.save("")),
    ("Catalog.save to an empty path", lambda: ts.Catalog(INDEX._tools).save("")),
]


@pytest.mark.parametrize("make, cls, field", [c[1:] for c in TOOL_CASES], ids=[c[0] for c in TOOL_CASES])
def test_bad_tool_input_is_a_typed_error_naming_the_tool_and_field(
    make: Callable[[], Any], cls: type[Exception], field: str
) -> None:
    with pytest.raises(cls) as e:
        make()
    assert type(e.value) is cls
    assert e.value.tool is not None and e.value.field == field  # type: ignore[attr-defined]


@pytest.mark.parametrize("call", [c[1] for c in PARAMETER_CASES], ids=[c[0] for c in PARAMETER_CASES])
def test_bad_parameters_are_invalid_parameter_errors(call: Callable[[], Any]) -> None:
    with pytest.raises(InvalidParameterError) as e:
        call()
    assert type(e.value) is InvalidParameterError


@pytest.mark.parametrize(
    "name, text",
    [
        ("deep.json", "[" * DEEP + "]" * DEEP),
        ("deep.jsonl", '{"name": "t"}\n' + "[" * DEEP + "]" * DEEP + "\n"),
        ("deep.txt", "{" + '"a": {' * DEEP + "}" * DEEP + "}"),
        ("huge.json", '[{"name": "t", "parameters": {"type": "object", "default": ' + "7" * 5000 + "}}]"),
        ("huge.jsonl", '{"name": "t", "cost_tokens": ' + "7" * 5000 + "}\n"),
    ],
)
def test_files_too_deep_or_with_huge_numbers_are_format_errors(tmp_path: Path, name: str, text: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(CatalogFormatError) as e:
        ts.Catalog.from_file(tmp_path / name)
    assert type(e.value) is CatalogFormatError and name in str(e.value)


def test_a_content_block_of_an_odd_type_adds_no_text_and_raises_nothing() -> None:
    for kind in (["text"], {"k": 1}):  # untrusted history: a "type" that is not a string
        blocks = [{"type": kind, "text": "refund"}, {"type": "text", "text": "order"}]
        assert ts.Query.from_messages([{"role": "user", "content": blocks}]).parts == (("order", 1.0),)


def test_a_damaged_usage_store_is_a_store_format_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "usage.db"
    store = ts.UsageStore(path)
    for i in range(2000):  # pages past the first, which opening the file does not read
        store.record(f"u{i}", f"t{i}")
    store.close()
    data = bytearray(path.read_bytes())
    for offset in range(4096, len(data), 4096):
        data[offset : offset + 16] = b"\xff" * 16
    path.write_bytes(bytes(data))
    store = ts.UsageStore(path)
    for call in (lambda: store.record("u1", "t1"), lambda: store.score("u1", "t1"), store.reach):
        with pytest.raises(StoreFormatError) as e:
            call()
        assert e.value.path == str(path)  # type: ignore[attr-defined]


def test_a_usage_row_another_program_wrote_without_numbers_counts_as_no_use(tmp_path: Path) -> None:
    path = tmp_path / "usage.db"
    store = ts.UsageStore(path, warmup=0)
    store.record("u", "t")
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO usage VALUES ('u', 'x', 'abc', 'lots', 'never')")
    assert store.score("u", "x") == 0.0 and store.score("u", "t") > 0
    assert store.reach() == (1, {"t": 1})


def test_a_normal_query_and_a_valid_surrogate_pair_still_work() -> None:
    assert [h.tool.name for h in INDEX.search("refund")] == ["a"]
    assert INDEX.search("refund 😀") == INDEX.search("refund")  # a whole emoji is text like any other
    assert ts.Tool("t", "emoji 😀", annotations={"title": "😀"}).annotations == {"title": "😀"}


@pytest.mark.parametrize(
    ("name", "refused_by"),
    [
        ("math.sum", {"OpenAI", "Anthropic"}),
        ("a" * 65, {"OpenAI"}),
        ("a" * 129, {"OpenAI", "Anthropic"}),
        ("ok_name-1", set()),
    ],
)
def test_names_an_api_would_refuse_are_typed_errors_naming_the_tool(name: str, refused_by: set[str]) -> None:
    from toolsift.assemble import to_anthropic, to_mcp, to_openai

    tool = ts.Tool(name, "sums two numbers")
    index = ts.Index([tool])
    emitters = {
        "OpenAI": [to_openai, lambda t: index.select("sums", budget_tokens=None).to_openai()],
        "Anthropic": [to_anthropic, lambda t: index.select("sums", budget_tokens=None).to_anthropic()],
    }
    for api, emit in emitters.items():
        for e in emit:
            if api in refused_by:
                with pytest.raises(InvalidToolError, match=api) as raised:
                    e([tool])
                assert raised.value.tool == name and raised.value.field == "name"
            else:
                assert e([tool])[0]
    assert to_mcp([tool])[0]["name"] == name  # MCP allows dots and 128 characters


PACKAGE = Path(ts.__file__).resolve().parent
#: Builtin raises that are protocol, not errors of the library: a module's ``__getattr__``, the
#: import-time check of the scanner's own patterns, the CLI's exit status.
PROTOCOL = {("gateway/__init__.py", "AttributeError"), ("scan.py", "AssertionError"), ("cli.py", "SystemExit")}
PROTOCOL.add(("__main__.py", "SystemExit"))


def _raised_builtins(path: Path) -> list[tuple[str, int]]:
    import ast
    import builtins

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        exc = node.exc if isinstance(node, ast.Raise) else None
        name = exc.func if isinstance(exc, ast.Call) else exc
        if isinstance(name, ast.Name):
            kind = getattr(builtins, name.id, None)
            if isinstance(kind, type) and issubclass(kind, BaseException):
                found.append((name.id, node.lineno))
    return found


def test_every_exception_the_library_raises_is_a_class_of_toolsift_errors() -> None:
    import ast

    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for name, line in _raised_builtins(path):
            if (rel, name) not in PROTOCOL:
                offenders.append(f"{rel}:{line} raises {name}")
        if rel == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name | ast.Attribute) and ast.unparse(b).endswith(("Error", "Exception"))
                for b in node.bases
            ):
                offenders.append(f"{rel}:{node.lineno} defines {node.name} outside errors.py")
    assert offenders == []
    defined = {n for n, v in vars(ts.errors).items() if isinstance(v, type) and issubclass(v, ts.errors.ToolsiftError)}
    assert defined == set(ts.errors.__all__)
