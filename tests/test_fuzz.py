"""Fuzzing the Python entry points with hypothesis: loaders of every shape, tools, queries and
callers get arbitrary JSON-like input (control and zero-width characters, lone surrogates, line
separators, deep nesting up to 100,000 levels, huge and empty strings). Every outcome is a result or
a typed ``ToolsiftError``; nothing else escapes.

``TOOLSIFT_FUZZ_EXAMPLES`` sets the cases per target (CI runs a short smoke; the figures in
SECURITY.md come from a longer run)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolsift as ts
from toolsift.errors import ToolsiftError

EXAMPLES = int(os.environ.get("TOOLSIFT_FUZZ_EXAMPLES", "300"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

odd_text = st.text(
    st.sampled_from(list("ab zé_-.中\u200b\u202e\x00\x07\n\t\ufeff\U000e0041💥\ud83d\udfff\u2028\x85")), max_size=40
) | st.just("w " * 20_000)
names = st.text(st.sampled_from(list("abz_-.é中💥")), min_size=1, max_size=20) | odd_text  # mostly valid
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | odd_text
json_like = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(odd_text | st.sampled_from(
        ["name", "description", "inputSchema", "input_schema", "parameters", "function", "type", "properties",
         "tools", "annotations", "permissions", "core", "examples", "search_text", "cost_tokens"]), inner, max_size=6),
    max_leaves=30,
)  # fmt: skip
tool_like = st.fixed_dictionaries(
    {"name": odd_text | scalars},
    optional={
        "description": odd_text | scalars,
        "inputSchema": json_like,
        "parameters": json_like,
        "input_schema": json_like,
        "function": json_like,
        "type": st.sampled_from(["function", "object", "custom"]) | scalars,
        "annotations": json_like,
    },
)
inputs = st.lists(tool_like | json_like, max_size=5) | json_like


def outcome(fn: Any, *args: Any) -> None:
    with contextlib.suppress(ToolsiftError):
        fn(*args)


@FUZZ
@given(inputs)
def test_loaders_return_tools_or_typed_errors(data: Any) -> None:
    for load in (ts.Catalog.from_mcp, ts.Catalog.from_openai, ts.Catalog.from_anthropic):
        outcome(load, data)


@FUZZ
@given(inputs)
def test_catalog_files_return_tools_or_typed_errors(tmp_path_factory: Any, data: Any) -> None:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    for name, text in (("a.json", json.dumps(data)), ("a.jsonl", "\n".join(json.dumps(x) for x in data) if
                       isinstance(data, list) else json.dumps(data))):  # fmt: skip
        path = folder / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        outcome(ts.Catalog.from_file, path)


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    return schema


@FUZZ
@given(names, odd_text, st.integers(0, 120) | st.integers(0, 3000), st.lists(odd_text, max_size=3), odd_text, scalars)
def test_tools_index_and_queries_never_crash(
    name: str, description: str, depth: int, caller: list[str], query: str, budget: Any
) -> None:
    try:
        tool = ts.Tool(name, description, _nested(depth), permissions=caller[:1], examples=[description])
    except ToolsiftError:
        return
    other = ts.Tool("other", query.encode(errors="replace").decode() or "x")  # matches the query, if it is text
    index = ts.Index([tool, other], scan="report")
    outcome(lambda: index.search(query, k=5, caller=caller))
    fair = budget if isinstance(budget, int) and not isinstance(budget, bool) else None
    outcome(lambda: index.select(query, caller=caller, budget_tokens=fair))
    outcome(lambda: index.select(query, caller=caller, budget_tokens=budget))  # a wrong-typed budget: typed error


def _deep(levels: int, leaf: Any) -> Any:
    value = leaf
    for i in range(levels):
        value = [value] if i % 2 else {"type": "object", "x": value}
    return value


depths = st.integers(0, 150) | st.sampled_from([3_000, 100_000])


@FUZZ
@given(st.sampled_from(["parameters", "annotations", "examples", "description", "permissions"]), depths, scalars)
def test_deep_nesting_in_any_tool_field_is_a_result_or_a_typed_error(field: str, levels: int, leaf: Any) -> None:
    try:
        tool = ts.Tool("deep", **{field: _deep(levels, leaf)})
    except ToolsiftError:
        return
    ts.Index([tool]).select("deep")
    ts.to_mcp([tool]), ts.to_openai([tool]), ts.to_anthropic([tool]), tool.to_json()


@FUZZ
@given(depths, st.sampled_from(["a.json", "a.jsonl", "a.txt"]), st.sampled_from(["[]", "{}"]))
def test_deeply_nested_files_load_or_fail_typed(tmp_path_factory: Any, levels: int, name: str, brackets: str) -> None:
    path: Path = tmp_path_factory.mktemp("deep") / name
    open_, close = brackets
    inner = f'"k": {open_}' if open_ == "{" else open_
    path.write_text(open_ + inner * levels + close * levels + close, encoding="utf-8")
    outcome(ts.Catalog.from_file, path)
