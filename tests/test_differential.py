"""Hypothesis: the Rust core against the plain-Python oracle on random catalogs and callers."""

from __future__ import annotations

import itertools
import math

from hypothesis import assume, given, settings
from hypothesis import strategies as st

import toolsift as ts
from oracle import Doc, Oracle, tokenize
from toolsift._core import DEFAULT_PREFIX_WEIGHT
from toolsift.text import field_params, tool_fields

WORDS = [
    "order",
    "orders",
    "ordering",
    "refund",
    "policy",
    "policies",
    "status",
    "account",
    "ship",
    "box",
    "boxes",
    "help",
    "user",
    "delete",
    "the",
    "of",
    "café",
    "CAFE",
    "naïve",
    "getUser",
    "HTTPServer",
    "ec2",
    "s3Bucket",
    "EC2Instances",
    "天气预报",
    "東京",
    "雨",
    "한국어",
    "ﬁle",
    "ＡＢＣ",
    "running",
    "multiply",
    "multiplication",
    "creation",
    "create",
    "summary",
    "summarize",
]
PERMS = ["a", "b", "c", "d"]

text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=8).map(" ".join)
tool = st.builds(
    lambda desc, extra, perms, core, cost: (desc, extra, perms, core, cost),
    text,
    text,
    st.sets(st.sampled_from(PERMS), max_size=2),
    st.booleans(),
    st.integers(0, 120),
)
catalogs = st.lists(tool, min_size=1, max_size=25)
callers = st.sets(st.sampled_from(PERMS))


prefix_weights = st.sampled_from([0.0, DEFAULT_PREFIX_WEIGHT, 1.0])


def build(specs: list[tuple[str, str, set[str], bool, int]], prefix_weight: float) -> tuple[ts.Index, Oracle]:
    tools = [
        ts.Tool(f"tool_{i}", desc, permissions=sorted(perms), core=core, cost_tokens=cost, search_text=extra)
        for i, (desc, extra, perms, core, cost) in enumerate(specs)
    ]
    weights, bs = field_params(None, None)
    docs = [Doc(tool_fields(t), frozenset(t.permissions), t.cost_tokens or 0, t.core) for t in tools]
    return ts.Index(tools, prefix_weight=prefix_weight), Oracle(docs, weights, bs, 0.9, prefix_weight)


def well_separated(scores: dict[int, float]) -> bool:
    """No two different scores so close that f32 and f64 could order them differently."""
    values = sorted(set(scores.values()))
    return all(b - a > 1e-4 * max(abs(b), 1.0) for a, b in itertools.pairwise(values))


ODD = "éÉñçüÅ天气预報東京한국어カタ\u0301\u200bﬁＡ_-./ "
# Python's str.isalnum and Rust's char::is_alphanumeric agree on Latin, CJK and these forms.
texts = st.text(st.characters(max_codepoint=0x24F) | st.sampled_from(ODD), max_size=40)


@settings(max_examples=500)
@given(texts)
def test_tokenizer_matches_the_oracle_on_any_text(s: str) -> None:
    assert ts.tokenize(s) == tokenize(s)


@settings(max_examples=300, deadline=None)
@given(catalogs, text, callers, st.integers(0, 30), prefix_weights)
def test_search_equals_the_oracle(specs: list, query: str, caller: set[str], k: int, prefix_weight: float) -> None:
    idx, oracle = build(specs, prefix_weight)
    assume(not oracle.ambiguous(query) and well_separated(oracle.scores(query, caller)))
    got = [(h.position, h.score) for h in idx.search(query, k=k, caller=caller)]
    want = oracle.search(query, caller, k)
    assert [p for p, _ in got] == [p for p, _ in want]
    assert all(math.isclose(g, w, rel_tol=1e-4) for (_, g), (_, w) in zip(got, want, strict=True))


@settings(max_examples=300, deadline=None)
@given(catalogs, text, callers, st.integers(0, 400), st.none() | st.integers(0, 5), prefix_weights)
def test_select_equals_the_oracle(
    specs: list, query: str, caller: set[str], budget: int, k: int | None, prefix_weight: float
) -> None:
    idx, oracle = build(specs, prefix_weight)
    assume(not oracle.ambiguous(query) and well_separated(oracle.scores(query, caller)))
    sel = idx.select(query, caller=caller, budget_tokens=budget, max_tools=k)
    assert list(sel) == oracle.select(query, caller, budget, k)
    assert all(oracle.allowed(i, caller) for i in sel)
