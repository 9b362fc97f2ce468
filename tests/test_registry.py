"""Tool and Catalog: validation with typed errors that name the tool and field."""

from __future__ import annotations

import math

import pytest

import toolsift as ts
from toolsift.errors import (
    CatalogError,
    DuplicateToolError,
    InvalidParameterError,
    InvalidToolError,
    SchemaError,
    ToolsiftError,
    UnknownToolError,
)


def test_duplicate_names_are_refused_naming_the_tool() -> None:
    cat = ts.Catalog([ts.Tool("get_order")])
    with pytest.raises(DuplicateToolError) as e:
        cat.append(ts.Tool("get_order", "again"))
    assert e.value.tool == "get_order" and e.value.field == "name" and "get_order" in str(e.value)
    assert isinstance(e.value, ValueError) and isinstance(e.value, ToolsiftError)
    assert len(cat) == 1


@pytest.mark.parametrize("params", [[1, 2], "object", 3, None])
def test_parameters_that_are_not_a_json_object_are_refused(params: object) -> None:
    with pytest.raises(SchemaError) as e:
        ts.Tool("bad_schema", parameters=params)  # type: ignore[arg-type]
    assert e.value.tool == "bad_schema" and e.value.field == "parameters"


def test_parameters_that_are_not_json_are_refused() -> None:
    cyclic: dict = {"type": "object", "properties": {}}
    cyclic["properties"]["self"] = cyclic
    for params in (cyclic, {"type": "object", "default": math.nan}, {"type": "object", "x": object()}):
        with pytest.raises(SchemaError, match="bad_schema"):
            ts.Tool("bad_schema", parameters=params)
    with pytest.raises(SchemaError, match="object schema"):
        ts.Tool("bad_schema", parameters={"type": "array"})


def test_parameters_nested_past_the_limit_are_refused_at_definition_not_later() -> None:
    from toolsift.registry import MAX_SCHEMA_DEPTH

    def nested(levels: int) -> dict:
        schema: dict = {"type": "object"}
        for i in range(levels - 1):  # objects and arrays both count as a level; the outermost an object
            schema = {"type": "object", "p": schema} if (levels - i) % 2 == 0 else [schema]  # type: ignore[assignment]
        return schema

    ok = ts.Tool("deep_ok", parameters=nested(MAX_SCHEMA_DEPTH))
    index = ts.Index([ok])  # costed, indexed and emitted without hitting the recursion limit
    assert index.select("deep", budget_tokens=None) is not None and ok.definition()["parameters"]
    # past the limit: a typed error naming the tool, whatever the depth of the calling stack
    for levels in (MAX_SCHEMA_DEPTH + 1, 5_000):
        with pytest.raises(SchemaError, match="nest deeper") as e:
            ts.Tool("too_deep", parameters=nested(levels))
        assert e.value.tool == "too_deep" and e.value.field == "parameters"


def test_a_non_string_description_is_refused_as_a_type_error() -> None:
    with pytest.raises(InvalidToolError) as e:
        ts.Tool("t", description=42)  # type: ignore[arg-type]
    assert isinstance(e.value, TypeError) and e.value.field == "description" and e.value.tool == "t"


@pytest.mark.parametrize("name", ["", "has space", "tab\tname", "x" * 300, 7])
def test_bad_names_are_refused(name: object) -> None:
    with pytest.raises(InvalidToolError) as e:
        ts.Tool(name)  # type: ignore[arg-type]
    assert e.value.field == "name"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("permissions", [1]),
        ("permissions", [""]),
        ("examples", [None]),
        ("core", "yes"),
        ("cost_tokens", -1),
        ("cost_tokens", True),
    ],
)
def test_other_bad_fields_are_refused_naming_the_field(field: str, value: object) -> None:
    with pytest.raises(InvalidToolError) as e:
        ts.Tool("t", **{field: value})  # type: ignore[arg-type]
    assert e.value.field == field and e.value.tool == "t"


def test_tool_normalises_permissions_and_copies_its_schema() -> None:
    schema = {"type": "object", "properties": {"id": {"type": "string"}}}
    t = ts.Tool("t", permissions=["b", "a", "b"], parameters=schema, examples="one example")
    schema["properties"]["id"]["type"] = "integer"
    assert t.permissions == ("a", "b") and t.examples == ("one example",)
    assert t.parameters["properties"]["id"]["type"] == "string"
    assert ts.Tool("p", permissions="").permissions == () == ts.Tool("q", permissions=None).permissions  # type: ignore[arg-type]


def test_catalog_is_ordered_and_looks_tools_up_by_name() -> None:
    cat = ts.Catalog([ts.Tool("a"), {"name": "b", "description": "from a dict"}])
    assert cat.append(ts.Tool("c")) == 2
    assert cat.names == ("a", "b", "c") and cat.position("b") == 1 and "c" in cat
    assert cat.get("zz") is None
    with pytest.raises(UnknownToolError):
        cat.position("zz")


def test_negative_budget_and_bad_max_tools_are_refused(support: ts.Index) -> None:
    for kwargs in ({"budget_tokens": -1}, {"budget_tokens": 1.5}, {"max_tools": -2}):
        with pytest.raises(InvalidParameterError):
            support.select("order", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        support.search("order", k=-1)
    with pytest.raises(InvalidParameterError):
        support.search(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError):
        support.search("order", caller=[1])  # type: ignore[list-item]


def test_counts_past_64_bits_mean_no_limit(support: ts.Index) -> None:
    huge = 2**70
    assert list(support.select("order", budget_tokens=huge)) == list(support.select("order"))
    assert list(support.select("order", max_tools=huge)) == list(support.select("order"))
    assert support.search("order", k=huge) == support.search("order", k=len(support))
    assert [list(s) for s in support.select_many(["order"], budget_tokens=huge, max_tools=huge)] == [
        list(support.select("order"))
    ]


@pytest.mark.parametrize(("k1", "b"), [(math.nan, 0.75), (-1.0, 0.75), (1.2, 1.5)])
def test_out_of_domain_bm25_parameters_are_refused_by_the_core(k1: float, b: float) -> None:
    with pytest.raises(InvalidParameterError):
        ts.Index([ts.Tool("t")], k1=k1, b=b)


def test_bad_field_weights_and_token_counters_are_refused() -> None:
    with pytest.raises(InvalidParameterError):
        ts.Index([ts.Tool("t")], field_weights={"nme": 2.0})
    with pytest.raises(InvalidParameterError):
        ts.Index([ts.Tool("t")], field_weights={"name": -1.0})
    # a weight so small that an occurrence could add nothing is refused, naming the field
    with pytest.raises(InvalidParameterError, match="'description'"):
        ts.Index([ts.Tool("t", "alphabetical list")], field_weights={"description": 1e-45})
    ts.Index([ts.Tool("t", "alphabetical list")], field_weights={"description": 0})
    with pytest.raises(CatalogError, match="'t'"):
        ts.Index([ts.Tool("t")], count_tokens=lambda d: -5)


def test_empty_enormous_and_odd_text_is_indexed_without_error() -> None:
    tools = [
        ts.Tool("empty"),
        ts.Tool("huge", "word " * 200_000 + "needle"),
        ts.Tool("odd", "zero\u200bwidth \x00control \ud7ff 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 needle"),
    ]
    idx = ts.Index(tools)
    assert {h.tool.name for h in idx.search("needle")} == {"huge", "odd"}
    assert ts.Index([]).select("anything", budget_tokens=10).names == ()


def test_a_core_panic_surfaces_as_a_typed_internal_error() -> None:
    from toolsift import _core
    from toolsift.errors import InternalError

    with pytest.raises(InternalError, match="toolsift core failed"):
        _core._panic_for_tests()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("caf\u00e9_lookup", "cafe\u0301_lookup"),
        ("cafe\u0301_lookup", "caf\u00e9_lookup"),
        ("ｓｅａｒｃｈ", "search"),
        ("search", "ｓｅａｒｃｈ"),
    ],
)
def test_names_that_differ_only_in_unicode_normalisation_are_refused_as_duplicates(first: str, second: str) -> None:
    with pytest.raises(DuplicateToolError, match="Unicode normalisation") as raised:
        ts.Catalog([ts.Tool(first, "Look up"), ts.Tool(second, "Delete everything", permissions=["admin"])])
    assert (raised.value.tool, raised.value.field) == (second, "name")
    assert len(ts.Catalog([ts.Tool("caf\u00e9_lookup"), ts.Tool("cafe_lookup")])) == 2  # other names stay apart


@pytest.mark.parametrize("value", [False, 0, 0.0, {}, b"", {"admin": False}])
def test_permissions_that_are_not_strings_are_refused_even_when_falsy(value: object) -> None:
    """False, 0, {} or b"" made the tool public (`permissions or ()`) where True, 1, {"a": 1}
    or b"admin" were refused: a loader's `permissions={"wipe": False}` opened the tool to all."""
    with pytest.raises(InvalidToolError, match="permissions"):
        ts.Tool("wipe", "Wipe the disk", permissions=value)  # type: ignore[arg-type]
    with pytest.raises(InvalidToolError, match="permissions"):
        ts.Catalog.from_mcp([{"name": "wipe", "inputSchema": {}}], permissions={"wipe": value})
    for public in (None, "", [], ()):
        assert ts.Tool("wipe", "Wipe the disk", permissions=public).permissions == ()  # type: ignore[arg-type]


def test_a_permission_in_toolsifts_reserved_namespace_is_refused() -> None:
    """No caller may hold one, and the index file of such a tool failed on every use after
    loading ("its line lists other permissions than the core index enforces")."""
    with pytest.raises(InvalidToolError, match="toolsift:") as e:
        ts.Tool("a", "b", permissions=["ops", "toolsift:withheld"])
    assert (e.value.tool, e.value.field) == ("a", "permissions")
