"""Loaders for MCP, OpenAI, Anthropic, JSON and JSONL, and the emitters that write those shapes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolsift as ts
from toolsift.errors import (
    CatalogEncodingError,
    CatalogError,
    CatalogFormatError,
    InvalidParameterError,
    InvalidToolError,
    InvalidToolTypeError,
    SchemaError,
)

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name"}},
    "required": ["city"],
}
WEATHER = ts.Tool("weather", "Current weather for a city", SCHEMA, annotations={"readOnlyHint": True})


def test_mcp_tools_list_result_round_trips() -> None:
    result = {"tools": ts.to_mcp([WEATHER]), "nextCursor": None}
    cat = ts.Catalog.from_mcp(result, permissions={"weather": ["geo"]}, core=["weather"])
    t = cat[0]
    assert (t.name, t.description, t.parameters, t.permissions, t.core) == (
        "weather",
        WEATHER.description,
        SCHEMA,
        ("geo",),
        True,
    )
    assert t.annotations == {"readOnlyHint": True}
    assert ts.to_mcp(cat) == result["tools"]


def test_openai_chat_and_responses_shapes_load() -> None:
    chat = ts.to_openai([WEATHER])
    responses = [{"type": "function", "name": "weather2", "description": "d", "parameters": SCHEMA}]
    cat = ts.Catalog.from_openai(chat + responses)
    assert cat.names == ("weather", "weather2") and cat[1].parameters == SCHEMA
    assert chat == [
        {"type": "function", "function": {"name": "weather", "description": WEATHER.description, "parameters": SCHEMA}}
    ]


def test_anthropic_tools_load_and_emit() -> None:
    tools = ts.to_anthropic([WEATHER])
    assert tools == [{"name": "weather", "description": WEATHER.description, "input_schema": SCHEMA}]
    assert ts.Catalog.from_anthropic(tools)[0].parameters == SCHEMA


def test_search_only_text_and_examples_are_indexed_but_never_emitted() -> None:
    t = ts.Tool("get_forecast", "Forecast", examples=["will it rain tomorrow"], search_text="umbrella precipitation")
    idx = ts.Index([t])
    assert idx.search("umbrella")[0].tool.name == "get_forecast"
    assert idx.search("rain tomorrow")[0].tool.name == "get_forecast"
    sel = idx.select("umbrella")
    emitted = json.dumps([sel.to_openai(), sel.to_anthropic(), sel.to_mcp()])
    assert "umbrella" not in emitted and "rain" not in emitted


@pytest.mark.parametrize(
    ("loader", "data", "match"),
    [
        (ts.Catalog.from_mcp, {"tools": "nope"}, "list of tools"),
        (ts.Catalog.from_mcp, {"tools": [{"description": "no name"}]}, "no 'name'"),
        (ts.Catalog.from_mcp, {"tools": [{"name": "x", "inputSchema": []}]}, "inputSchema"),
        (ts.Catalog.from_openai, [{"type": "web_search"}], "not a function"),
        (ts.Catalog.from_openai, [{"type": "function", "function": {"name": 5}}], "'name' must be a str"),
        (ts.Catalog.from_anthropic, [{"type": "bash_20250124", "name": "bash"}], "input_schema"),
        (ts.Catalog.from_anthropic, [3], "not a JSON object"),
    ],
)
def test_loader_input_of_the_wrong_shape_is_refused(loader, data, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CatalogFormatError, match=match):
        loader(data)


def test_files_in_every_shape_load(tmp_path: Path) -> None:
    native = tmp_path / "native.jsonl"
    ts.Catalog([WEATHER, ts.Tool("secret", "s", permissions=["admin"], core=True, cost_tokens=0)]).save(native)
    cat = ts.Catalog.from_file(native)
    assert cat[1].permissions == ("admin",) and cat[1].core and cat[1].cost_tokens == 0 and cat[0] == WEATHER
    mixed = tmp_path / "mixed.json"
    mixed.write_text(json.dumps({"tools": [*ts.to_openai([WEATHER]), {"name": "b", "input_schema": SCHEMA}]}))
    assert ts.Catalog.from_file(mixed).names == ("weather", "b")


def test_unicode_line_separators_in_text_survive_a_save_and_a_load(tmp_path: Path) -> None:
    # JSON Lines are separated by "\n" alone; U+0085, U+2028 and U+2029 are ordinary characters
    tools = [
        ts.Tool(f"t{i}", f"first{c}second", examples=[f"ex{c}"], search_text=f"{c}x{c}", annotations={"title": c})
        for i, c in enumerate("\x85\u2028\u2029")
    ]
    for name in ("catalog.jsonl", "catalog.txt"):
        ts.Catalog(tools).save(tmp_path / name)
        assert list(ts.Catalog.from_file(tmp_path / name)) == tools


def test_invalid_utf8_in_a_file_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b'{"name": "ok"}\n{"name": "caf\xe9"}\n')
    with pytest.raises(CatalogEncodingError, match="line 2") as e:
        ts.Catalog.from_file(path)
    assert isinstance(e.value, ValueError)


def test_bad_json_lines_and_fields_name_the_file_line_and_tool(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text('{"name": "ok"}\n{"name": \n')
    with pytest.raises(CatalogFormatError, match="line 2"):
        ts.Catalog.from_file(path)
    path.write_text('{"name": "ok", "colour": "red"}\n')
    with pytest.raises(CatalogFormatError, match="colour"):
        ts.Catalog.from_file(path)
    path.write_text('{"name": "t", "parameters": {"type": "string"}}\n')
    with pytest.raises(SchemaError, match=r"bad\.jsonl.*'t'"):
        ts.Catalog.from_file(path)
    with pytest.raises(CatalogFormatError, match="cannot read"):
        ts.Catalog.from_file(tmp_path / "missing.json")


def test_schema_text_reaches_three_levels_and_enums() -> None:
    from toolsift.text import schema_text

    schema = {
        "type": "object",
        "properties": {
            "shipment": {
                "description": "Where it goes",
                "properties": {
                    "address": {"anyOf": [{"properties": {"postcode": {"description": "zip code"}}}]},
                    "speed": {"enum": ["overnight", "ground"]},
                },
            },
            "items": {
                "type": "array",
                "items": {"properties": {"sku": {"properties": {"part": {"properties": {"deep4": {}}}}}}},
            },
        },
    }
    text = schema_text(schema)
    for word in ("shipment", "Where it goes", "address", "postcode", "zip code", "overnight", "ground", "sku", "part"):
        assert word in text
    assert "deep4" not in text


def test_token_cost_defaults_to_a_quarter_of_the_definition_bytes_and_is_pluggable() -> None:
    idx = ts.Index([WEATHER])
    assert idx.cost(0) == ts.default_token_count(WEATHER.definition()) > 0
    assert ts.Index([WEATHER], count_tokens=lambda d: 7).cost(0) == 7
    assert ts.Index([ts.Tool("w", cost_tokens=3)], count_tokens=lambda d: 7).cost(0) == 3


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".txt", ""])
@pytest.mark.parametrize("count", [1, 2])
def test_a_saved_catalog_loads_back_whatever_the_files_name(tmp_path: Path, suffix: str, count: int) -> None:
    catalog = ts.Catalog([ts.Tool(f"tool_{i}", f"Tool number {i}") for i in range(count)])
    path = tmp_path / f"tools{suffix}"
    catalog.save(path)
    assert list(ts.Catalog.from_file(path)) == list(catalog)


def test_a_broken_json_file_is_reported_as_json_not_as_lines(tmp_path: Path) -> None:
    path = tmp_path / "tools.json"
    path.write_text('[\n  {"name": "a", "description": "x"},\n  {"name": "b" "description": "y"}\n]\n')
    with pytest.raises(CatalogFormatError, match=r"tools\.json: not valid JSON"):
        ts.Catalog.from_file(path)


def test_loader_options_never_strip_what_a_file_says_and_warn_of_unknown_names(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tools.jsonl"
    ts.Catalog(
        [ts.Tool("drop_database", "Drop the database", permissions=["admin"]), ts.Tool("weather", "Weather")]
    ).save(path)
    with caplog.at_level("WARNING", logger="toolsift.loaders"):
        loaded = ts.Catalog.from_file(path, permissions={"weather": ["geo"], "delete_acount": ["admin"]}, core=["hlep"])
    assert loaded.get("drop_database").permissions == ("admin",)  # not made public
    assert loaded.get("weather").permissions == ("geo",)
    assert ts.Index(loaded).search("drop database") == []
    assert "delete_acount" in caplog.text and "hlep" in caplog.text
    # an item's own core flag still goes through the Tool's check
    odd = tmp_path / "odd.jsonl"
    odd.write_text('{"name": "a", "description": "x", "parameters": {"type": "object"}, "core": 0}\n')
    with pytest.raises(CatalogError, match="core"):
        ts.Catalog.from_file(odd)


def test_permissions_and_core_named_in_another_unicode_form_still_apply(caplog: pytest.LogCaptureFixture) -> None:
    """They were looked up by exact name: a listing spelling "café" decomposed, where the
    mapping has it composed, gave that tool no permission (public) and no core flag."""
    composed, decomposed = "caf\u00e9_refund", "cafe\u0301_refund"
    listed = {"tools": [{"name": decomposed, "description": "Refund a payment", "inputSchema": {"type": "object"}}]}
    with caplog.at_level("WARNING", logger="toolsift.loaders"):
        [tool] = ts.Catalog.from_mcp(listed, permissions={composed: ["billing"]}, core=[composed])
    assert (tool.name, tool.permissions, tool.core) == (decomposed, ("billing",), True)
    assert ts.Index([tool]).search("refund a payment") == []  # not public
    assert "not in the catalog" not in caplog.text
    wide = "\uff43af\u00e9_refund"  # a full-width "c": the mapping's two forms both fold like it
    listed["tools"][0]["name"] = wide
    with pytest.raises(InvalidToolError, match="permissions name this tool in 2 Unicode forms") as e:
        ts.Catalog.from_mcp(listed, permissions={composed: ["billing"], decomposed: []})
    assert e.value.tool == wide and e.value.field == "permissions"


@pytest.mark.parametrize(
    ("load", "item", "field"),
    [
        (ts.Catalog.from_openai, {"name": "put", "inputSchema": SCHEMA}, "inputSchema"),
        (
            ts.Catalog.from_openai,
            {"type": "function", "function": {"name": "put", "input_schema": SCHEMA}},
            "input_schema",
        ),
        (ts.Catalog.from_mcp, {"name": "put", "parameters": SCHEMA}, "parameters"),
        (ts.Catalog.from_mcp, {"name": "put", "input_schema": SCHEMA}, "input_schema"),
    ],
)
def test_a_tool_given_to_the_loader_of_another_shape_is_refused_not_loaded_without_its_schema(
    load: Any, item: dict[str, Any], field: str
) -> None:
    """It loaded with an empty schema and not a word logged."""
    with pytest.raises(CatalogFormatError, match="load it with the loader of that shape") as e:
        load([item])
    assert e.value.tool == "put" and e.value.field == field


def test_a_key_given_twice_in_one_object_is_refused_not_read_as_the_last(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text('{"name": "drop", "permissions": ["admin"], "permissions": []}\n')
    with pytest.raises(CatalogFormatError, match=r"line 1: a JSON object has the key 'permissions' twice") as e:
        ts.Catalog.from_file(path)
    assert str(e.value).count("line 1") == 1  # where it is, said once


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"core": "refund"}, "core must be a list of tool names, not str"),
        ({"core": None}, "core must be a list of tool names, not NoneType"),
        ({"permissions": [("refund", "billing")]}, "permissions must map tool names to permissions"),
    ],
)
def test_loader_options_of_the_wrong_type_are_refused(options: dict[str, object], says: str) -> None:
    items = [{"name": "refund", "description": "Refund an order", "inputSchema": {"type": "object"}}]
    with pytest.raises(InvalidParameterError, match=says):
        ts.Catalog.from_mcp(items, **options)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="permission"):  # a misspelt option is not ignored
        ts.Catalog.from_mcp(items, permission={"refund": "billing"})  # type: ignore[call-arg]


def test_an_emitted_tools_array_is_the_callers_to_change() -> None:
    """Editing an emitted schema (``additionalProperties: false`` for a strict mode) leaves the
    tool, its saved form and the next selection as they were."""
    tool = ts.Tool(
        "get_order",
        "Get an order",
        {"type": "object", "properties": {"id": {"type": "string"}}},
        annotations={"readOnlyHint": True},
    )
    index = ts.Index([tool])
    first = index.select("get order")
    for entry in first.to_openai():
        entry["function"]["parameters"]["additionalProperties"] = False  # type: ignore[index]
    for mcp_entry in first.to_mcp():
        mcp_entry["inputSchema"]["properties"]["id"]["type"] = "integer"
        mcp_entry["annotations"]["readOnlyHint"] = False
    for anthropic_entry in first.to_anthropic():
        anthropic_entry["input_schema"]["required"] = ["id"]  # type: ignore[index]
    tool.definition()["parameters"]["properties"].clear()
    assert (
        index.select("get order").to_mcp()
        == ts.Index([ts.Tool.from_dict(json.loads(tool.to_json()))]).select("get order").to_mcp()
    )
    assert tool.parameters == {"type": "object", "properties": {"id": {"type": "string"}}}
    assert tool.annotations == {"readOnlyHint": True}


def test_mcp_annotations_of_the_wrong_type_are_refused_naming_the_tool() -> None:
    with pytest.raises(InvalidToolTypeError, match="'readOnlyHint' must be a bool") as raised:
        ts.Tool("t", "x", annotations={"readOnlyHint": "maybe"})
    assert raised.value.tool == "t" and raised.value.field == "annotations"
    with pytest.raises(InvalidToolTypeError, match="'title' must be a str"):
        ts.Tool("t", "x", annotations={"title": 5})
    assert ts.Tool("t", "x", annotations={"title": "T", "readOnlyHint": True, "x-custom": [1]}).annotations


def test_names_and_permissions_are_kept_as_plain_strings() -> None:
    class Lying(str):
        def __eq__(self, other: object) -> bool:
            return True

        def __hash__(self) -> int:
            return 0

    tool = ts.Tool(Lying("send_mail"), "Send mail", permissions=[Lying("admin"), Lying("billing")])
    assert type(tool.name) is str and tool.permissions == ("admin", "billing")
    assert all(type(p) is str for p in tool.permissions)
    index = ts.Index([tool])
    assert index.search("send mail", caller=["admin"]) == []  # both are needed... as written
    with pytest.raises(InvalidParameterError, match="a catalog is made of a list of tools"):
        ts.Catalog(None)  # type: ignore[arg-type]


def test_fields_a_tool_does_not_keep_are_reported_not_dropped_silently(caplog: pytest.LogCaptureFixture) -> None:
    openai = [{"type": "function", "function": {"name": "a", "parameters": {"type": "object"}, "x_vendor": True}}]
    anthropic = [{"name": "b", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}]
    mcp = [{"name": "c", "inputSchema": {"type": "object"}, "_meta": {"x": 1}, "icons": [], "title": "C"}]
    with caplog.at_level("WARNING", logger="toolsift"):
        ts.Catalog.from_openai(openai)
        ts.Catalog.from_anthropic(anthropic)
        ts.Catalog.from_mcp(mcp)
        ts.Catalog.from_mcp([{"name": "d", "inputSchema": {"type": "object"}, "annotations": {"title": "D"}}])
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 3
    assert "function.x_vendor (1)" in said[0] and "cache_control (1)" in said[1]
    assert "_meta (1), icons (1)" in said[2] and "title" not in said[2]


def test_strict_is_kept_and_emitted_to_openai_and_anthropic(caplog: pytest.LogCaptureFixture) -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    schema["additionalProperties"] = False
    chat = [{"type": "function", "function": {"name": "find", "parameters": schema, "strict": True}}]
    flat = [{"type": "function", "name": "find", "parameters": schema, "strict": True}]  # Responses API
    claude = [{"name": "find", "input_schema": schema, "strict": False}]
    with caplog.at_level("WARNING", logger="toolsift"):
        loaded = [
            ts.Catalog.from_openai(chat)[0],
            ts.Catalog.from_openai(flat)[0],
            ts.Catalog.from_anthropic(claude)[0],
        ]
    assert not caplog.records  # nothing left unread
    assert [t.strict for t in loaded] == [True, True, False]
    assert ts.to_openai(loaded[:1])[0]["function"]["strict"] is True
    assert ts.to_anthropic(loaded[2:])[0]["strict"] is False
    plain = ts.Tool("find", "", schema)
    assert "strict" not in ts.to_openai([plain])[0]["function"] and "strict" not in ts.to_anthropic([plain])[0]
    assert "strict" not in ts.to_mcp(loaded)[0]
    assert ts.Tool.from_dict(json.loads(loaded[0].to_json())) == loaded[0]
    with pytest.raises(InvalidToolTypeError, match="strict must be") as e:
        ts.Tool("t", strict="yes")  # type: ignore[arg-type]
    assert (e.value.tool, e.value.field) == ("t", "strict")
    with pytest.raises(CatalogFormatError, match="'strict' must be a bool"):
        ts.Catalog.from_openai([{"type": "function", "function": {"name": "x", "strict": 1}}])


def test_an_mcp_title_and_output_schema_are_kept_and_served_in_mcp_output_only(tmp_path: Path) -> None:
    out = {"type": "object", "properties": {"temperature": {"type": "number", "description": "°C"}}}
    listed = [
        {
            "name": "weather",
            "title": "Forecast Station ☀",
            "description": "Current weather",
            "inputSchema": {"type": "object"},
        },
        {"name": "plain", "description": "No extras", "inputSchema": {"type": "object"}},
    ]
    listed[0]["outputSchema"] = out
    catalog = ts.Catalog.from_mcp(listed)
    tool = catalog.get("weather")
    assert tool is not None and tool.title == "Forecast Station ☀" and tool.output_schema == out
    emitted = ts.to_mcp(catalog)
    assert emitted[0] == {**listed[0], "inputSchema": {"type": "object"}}
    assert list(emitted[0]) == ["name", "title", "description", "inputSchema", "outputSchema"]
    assert emitted[1] == listed[1]
    emitted[0]["outputSchema"]["properties"].clear()  # a copy: the catalog keeps its own
    assert tool.output_schema == out
    for other in (ts.to_openai(catalog), ts.to_anthropic(catalog), [tool.definition()]):
        assert "Forecast Station ☀" not in json.dumps(other, ensure_ascii=False) and "°C" not in json.dumps(other)
    bare = ts.Index([ts.Tool("weather", "Current weather", {"type": "object"})])
    index = ts.Index(catalog)
    assert index.cost(0) == bare.cost(0)  # never counted: clients show them to people
    assert index.search("forecast station") == []  # never indexed
    index.save(tmp_path / "i.tsidx")
    catalog.save(tmp_path / "c.jsonl")
    for again in (ts.Index.load(tmp_path / "i.tsidx").get("weather"), ts.Catalog.from_file(tmp_path / "c.jsonl")[0]):
        assert again == tool and ts.to_mcp([again]) == ts.to_mcp([tool])
    with pytest.raises(InvalidToolTypeError, match="title must be a string") as e:
        ts.Tool("t", title=3)  # type: ignore[arg-type]
    assert (e.value.tool, e.value.field) == ("t", "title")
    with pytest.raises(SchemaError, match="output_schema must be an object schema") as s:
        ts.Tool("t", output_schema={"type": "array"})
    assert (s.value.tool, s.value.field) == ("t", "output_schema")
    with pytest.raises(CatalogFormatError, match="'outputSchema' must be a Mapping"):
        ts.Catalog.from_mcp([{"name": "x", "inputSchema": {"type": "object"}, "outputSchema": "object"}])


@pytest.mark.parametrize(
    "item",
    [
        {"name": "delete_all", "description": "Delete every account", "inputSchema": {}, "permissions": ["admin"]},
        {"type": "function", "function": {"name": "delete_all", "parameters": {}}, "permissions": ["admin"]},
        {"type": "function", "function": {"name": "delete_all", "parameters": {}, "permissions": ["admin"]}},
        {"name": "delete_all", "input_schema": {"type": "object"}, "permissions": "admin"},
        {"name": "delete_all", "inputSchema": {}, "core": True},
    ],
)
def test_toolsifts_access_fields_in_another_shape_are_refused_not_dropped(item: dict, tmp_path: Path) -> None:
    """An MCP, OpenAI or Anthropic item given toolsift's `permissions` was read without them
    (a warning said the field is not emitted): the admin-only tool became public."""
    path = tmp_path / "tools.json"
    path.write_text(json.dumps([item]))
    field = "core" if "core" in item else "permissions"
    with pytest.raises(CatalogFormatError, match=field) as e:
        ts.Catalog.from_file(path)
    assert e.value.tool == "delete_all" and str(path) in str(e.value)
    loader = ts.Catalog.from_mcp if "inputSchema" in item else ts.Catalog.from_openai
    if "input_schema" in item:
        loader = ts.Catalog.from_anthropic
    with pytest.raises(CatalogFormatError, match=field):
        loader([item])


def test_one_page_of_a_paginated_listing_is_refused_not_taken_for_the_whole() -> None:
    """A tools/list result with a nextCursor loaded as the whole catalog: every later page's
    tools were missing, unnoticed."""
    page = {"tools": [{"name": "a", "inputSchema": {}}], "nextCursor": "page-2"}
    with pytest.raises(CatalogFormatError, match="nextCursor") as e:
        ts.Catalog.from_mcp(page)
    assert e.value.field == "nextCursor"
    assert ts.Catalog.from_mcp({**page, "nextCursor": None}).names == ("a",)  # the last page
    from mcp import types

    result = types.ListToolsResult.model_validate(page)  # the SDK's object: next_cursor
    with pytest.raises(CatalogFormatError, match="nextCursor"):
        ts.Catalog.from_mcp(result)
    assert ts.Catalog.from_mcp(types.ListToolsResult.model_validate({"tools": page["tools"]})).names == ("a",)


def test_a_name_listed_twice_in_a_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tools.jsonl"
    path.write_text('{"name": "a"}\n{"name": "a"}\n')
    with pytest.raises(CatalogError, match="duplicate") as e:
        ts.Catalog.from_file(path)
    assert str(path) in str(e.value)
