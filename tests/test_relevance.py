"""The relevance gate: a request that nothing in the catalog fits gets no tool (but the core ones)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolsift as ts
from toolsift import _core
from toolsift.errors import InvalidParameterError, SnapshotError, UnknownToolError
from toolsift.text import tool_fields

# "get" and "data" are in five tools of six: words that say little about which tool is wanted
TOOLS = [
    ts.Tool("search_help", "Search the help center articles", core=True),
    ts.Tool("issue_refund", "Refund a customer order payment; get its receipt data", permissions="billing.refund"),
    ts.Tool("order_status", "Get the shipping status data of an order", permissions="orders.read"),
    ts.Tool("get_weather", "Get the weather forecast data for a city"),
    ts.Tool("get_data", "Get data"),
    ts.Tool("get_report", "Get report data"),
]
EVERYONE = ["billing.refund", "orders.read"]


def reference_evidence(tools: list[ts.Tool], query: str, tool: ts.Tool) -> float:
    """Summed IDF of the distinct query words the tool contains, in units of a word one tool has."""
    words = [set(_core.tokenize(" ".join(tool_fields(t)))) for t in tools]
    df = {w: sum(w in ws for ws in words) for w in set().union(*words)}
    n = len(tools)

    def idf(d: int) -> float:
        return math.log(1 + (n - d + 0.5) / (d + 0.5))

    mine = words[tools.index(tool)]
    found = {w for w in _core.tokenize(query) if w in df and not w.isnumeric()}
    return sum(idf(df[w]) for w in found & mine) / idf(1)


VOCAB = ["refund", "order", "payment", "weather", "city", "ship", "status", "card", "email", "42", "2024"]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(VOCAB), min_size=1, max_size=6), min_size=1, max_size=8),
    st.lists(st.sampled_from(VOCAB), max_size=6),
)
def test_evidence_is_the_idf_of_the_query_words_a_tool_holds(descriptions: list[list[str]], words: list[str]) -> None:
    tools = [ts.Tool(f"t{i}", " ".join(d)) for i, d in enumerate(descriptions)]
    query = " ".join(words)
    got = ts.Index(tools).evidence(query, [t.name for t in tools])
    want = [reference_evidence(tools, query, t) for t in tools]
    assert got == pytest.approx(want, rel=1e-5, abs=1e-6)
    assert all(math.copysign(1, e) == 1 for e in got)  # no -0.0 in the output


def test_a_request_nothing_fits_gets_only_the_core_tools() -> None:
    gated, plain = ts.Index(TOOLS, min_evidence=0.5), ts.Index(TOOLS)
    vague = "get me the data for 2024"  # common words and a number: five tools match
    assert len(plain.search(vague, caller=EVERYONE)) == 5
    assert gated.search(vague, caller=EVERYONE) == []
    assert gated.select(vague, caller=EVERYONE, budget_tokens=1000).names == ("search_help",)
    assert plain.select(vague, caller=EVERYONE, budget_tokens=1000).names != ("search_help",)


def test_a_request_that_fits_is_answered_as_without_the_gate() -> None:
    gated, plain = ts.Index(TOOLS, min_evidence=0.5), ts.Index(TOOLS)
    for q in ["refund the payment of my order", "weather forecast in Paris", "shipping status"]:
        assert gated.search(q, caller=EVERYONE) == plain.search(q, caller=EVERYONE)
        assert (
            gated.select(q, caller=EVERYONE, budget_tokens=1000).to_openai()
            == plain.select(q, caller=EVERYONE, budget_tokens=1000).to_openai()
        )
        assert gated.search_many([q], caller=EVERYONE) == plain.search_many([q], caller=EVERYONE)
        assert [s.names for s in gated.select_many([q], caller=EVERYONE)] == [
            s.names for s in plain.select_many([q], caller=EVERYONE)
        ]
    assert gated.search_many(["get me the data"], caller=EVERYONE) == [[]]


def test_the_gate_uses_the_callers_own_statistics_in_tenant_mode() -> None:
    # "refund" is rare in the whole catalog but in every tool the caller may use
    hidden = [ts.Tool(f"admin_{i}", f"purge cache number {i}", permissions="admin") for i in range(30)]
    visible = [ts.Tool("refund_card", "refund a card"), ts.Tool("refund_order", "refund an order")]
    tenant = ts.Index(visible + hidden, statistics="caller", min_evidence=0.5)
    alone = ts.Index(visible, min_evidence=0.5)
    names = ["refund_card", "refund_order"]
    assert tenant.evidence("refund", names) == alone.evidence("refund", names)
    assert tenant.search("refund") == [] == alone.search("refund")  # in every tool: no evidence
    shared = ts.Index(visible + hidden, min_evidence=0.5)
    assert shared.evidence("refund", names)[0] > tenant.evidence("refund", names)[0]


def test_evidence_of_a_tool_the_caller_may_not_use_is_refused_like_an_unknown_one() -> None:
    index = ts.Index(TOOLS)
    with pytest.raises(UnknownToolError):
        index.evidence("refund", ["issue_refund"], caller=["orders.read"])
    with pytest.raises(UnknownToolError):
        index.evidence("refund", ["no_such_tool"], caller=EVERYONE)


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "0.5", True])
def test_a_bad_floor_is_refused(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="min_evidence"):
        ts.Index(TOOLS, min_evidence=bad)  # type: ignore[arg-type]


def test_the_floor_is_saved_and_can_be_overridden_at_load(tmp_path: Path) -> None:
    path = tmp_path / "i.tsidx"
    ts.Index(TOOLS, min_evidence=0.5).save(path)
    assert ts.Index.load(path).search("get me the data", caller=EVERYONE) == []
    assert ts.Index.load(path, min_evidence=None).search("get me the data", caller=EVERYONE) != []
    with pytest.raises(InvalidParameterError):
        ts.Index.load(path, min_evidence=-1)
    from test_snapshot import parts, reseal, with_options

    for forged in (-1, "0.5", float("inf"), [0.5]):
        reseal(path, with_options(parts(path), min_evidence=forged))
        with pytest.raises(SnapshotError, match="min_evidence"):
            ts.Index.load(path)


def test_tool_search_of_a_gated_toolbox_answers_no_tool() -> None:
    box = ts.Toolbox(ts.Index(TOOLS, min_evidence=0.5), caller=EVERYONE, tiers=ts.ToolTierOptions())
    assert box.call("tool_search", {"query": "get me the data"}) == "[]"
    assert "get_weather" in box.call("tool_search", {"query": "weather in Paris"})


def test_the_gate_gives_one_verdict_per_request_whatever_k_or_budget() -> None:
    # the best-scoring tool holds little evidence, a lower one enough: the gate is open
    tools = [
        ts.Tool("get_data", "Get the data. Get data, data of data."),
        ts.Tool("get_report", "Get report data"),
        ts.Tool("get_list", "Get list"),
        ts.Tool("lookup", "Look up a record", {"type": "object", "properties": {"id": {"description": "a zebra id"}}}),
    ]
    index = ts.Index(tools, min_evidence=0.9)
    query = "get data zebra"
    assert max(index.evidence(query, ["get_data"])) < 0.9 <= max(index.evidence(query, ["lookup"]))
    for k in (1, 2, 4):
        assert len(index.search(query, k=k)) == k
    for cap in (1, 2, 4):
        assert len(index.select(query, max_tools=cap)) == cap


def test_a_core_tool_is_no_evidence_that_other_tools_fit() -> None:
    index = ts.Index(TOOLS, min_evidence=0.5)
    query = "help articles data"  # only the core tool holds these words' evidence
    assert index.evidence(query, ["search_help"])[0] >= 0.5 > max(index.evidence(query, ["get_data", "get_report"]))
    assert index.search(query) == []
    assert index.select(query).names == ("search_help",)


def test_evidence_refuses_bad_names_and_queries_with_typed_errors() -> None:
    index = ts.Index(TOOLS)
    with pytest.raises(InvalidParameterError, match="names must be a list"):
        index.evidence("data", "get_data")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="names must hold tool names"):
        index.evidence("data", [1])  # type: ignore[list-item]
    with pytest.raises(InvalidParameterError, match="lone surrogate"):
        index.evidence("data\ud800", ["get_data"])
