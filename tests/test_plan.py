"""The tier plan at catalog scale: the tools array fits its budget at every size, is the same on
every call and in every process, summarises groups of the caller's tools only, and tool_search
searches within a group."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolsift as ts
from toolsift.assemble import default_token_count
from toolsift.plan import Plan, Planner, Tier, default_group

TOPICS = ["bucket", "queue", "table", "function", "instance", "volume", "secret", "stream", "domain", "cluster"]
VERBS = ["create", "delete", "describe", "list", "update", "tag", "copy", "restore"]


def catalog(n: int, hidden: int = 0) -> list[ts.Tool]:
    """``n`` tools in groups of up to 40 (``g7__create_bucket_12``), then ``hidden`` tools of a
    group of their own that need a permission the test callers lack."""
    tools = []
    for i in range(n):
        group, topic, verb = f"g{i // 40}", TOPICS[(i // 40) % len(TOPICS)], VERBS[i % len(VERBS)]
        schema = {"type": "object", "properties": {"id": {"type": "string", "description": f"The {topic} id"}}}
        description = f"{verb.capitalize()} a {topic} ({i}).\nLonger text about the {topic} operation {i}."
        tools.append(ts.Tool(f"{group}__{verb}_{topic}_{i}", description, schema))
    for i in range(hidden):
        tools.append(ts.Tool(f"vault__unseal_zebracorn_{i}", "Unseal the zebracorn vault", permissions="vault"))
    return tools


def array_tokens(box: ts.Toolbox) -> int:
    """The tokens of the tools array, each entry counted as the plan counts it."""
    return sum(default_token_count(t["function"]) for t in box.tools("openai"))


@pytest.mark.parametrize("n", [10, 1_000, 20_000])
def test_the_tools_array_fits_its_budget_at_every_catalog_size(n: int) -> None:
    index = ts.Index(catalog(n))
    for budget in (700, 2_000, 6_400):
        box = ts.Toolbox(index, tiers=ts.ToolTierOptions(budget_tokens=budget, core=[index.name(0)]))
        assert array_tokens(box) <= budget, (n, budget)
        assert set(box.plan()) == set(index.names)  # every tool is still in the plan, reachable by search


def test_a_small_catalog_that_fits_is_listed_tool_by_tool() -> None:
    box = ts.Toolbox(ts.Index(catalog(10)), tiers=ts.ToolTierOptions(budget_tokens=6_400))
    search = box.tools("openai")[0]["function"]
    assert set(box.plan().values()) == {Tier.LISTED}
    assert "- g0__create_bucket_0 — Create a bucket (0)." in search["description"]
    assert "group" not in search["parameters"]["properties"]  # offered only when groups are summarised


def test_a_large_catalog_is_summarised_by_group_with_counts() -> None:
    box = ts.Toolbox(ts.Index(catalog(2_000)), tiers=ts.ToolTierOptions(budget_tokens=2_000))
    search = box.tools("openai")[0]["function"]
    assert Tier.DEFERRED in set(box.plan().values())
    assert "- g0 (40 tools): " in search["description"]
    assert "group" in search["parameters"]["properties"]


def test_the_room_summaries_free_lists_the_most_used_deferred_tools_again() -> None:
    """Step 2 deferred every listed tool before step 3's summaries freed most of the budget:
    AWS s3 + ec2 + iam at 6,000 tokens sent a 2,200-token array naming no tool's purpose,
    while 12,000 listed 100 tools."""
    tools = catalog(2_000)
    used = {t.name: (i * 7919) % 1_000 for i, t in enumerate(tools)}  # distinct usage counts
    options = ts.ToolTierOptions(budget_tokens=2_000, usage_count=lambda n: used[n])
    box = ts.Toolbox(ts.Index(tools), tiers=options)
    plan, groups = box.plan(), {t.name: t.name.split("__")[0] for t in tools}
    listed = [n for n, tier in plan.items() if tier is Tier.LISTED]
    summarised = {g for g in groups.values() if f"- {g} (" in box.tools("openai")[0]["function"]["description"]}
    assert listed and summarised and not {groups[n] for n in listed} & summarised
    assert array_tokens(box) > 0.9 * 2_000  # was about a third
    left = [n for n, tier in plan.items() if tier is Tier.DEFERRED and groups[n] not in summarised]
    assert min(used[n] for n in listed) >= max(used[n] for n in left)  # the most used come back


def test_the_plan_and_tools_array_are_the_same_on_every_call_and_in_every_process() -> None:
    box = ts.Toolbox(ts.Index(catalog(3_000)), tiers=ts.ToolTierOptions(budget_tokens=3_000))
    first = json.dumps(box.tools("openai"))
    assert json.dumps(box.tools("openai")) == first
    box.reset()
    assert json.dumps(box.tools("openai")) == first
    program = (
        "import hashlib, json, sys; sys.path.insert(0, sys.argv[1]); import test_plan as t, toolsift as ts; "
        "box = ts.Toolbox(ts.Index(t.catalog(3_000)), tiers=ts.ToolTierOptions(budget_tokens=3_000)); "
        "print(hashlib.sha256(json.dumps(box.tools('openai')).encode()).hexdigest())"
    )
    other = subprocess.run(
        [sys.executable, "-c", program, str(__import__("pathlib").Path(__file__).parent)],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "12345", "PATH": ""},
    )
    assert other.stdout.strip() == hashlib.sha256(first.encode()).hexdigest()


def test_a_group_summary_never_names_a_group_or_tool_the_caller_may_not_use() -> None:
    tools = catalog(2_000, hidden=300)
    tools.append(ts.Tool("g0__seal_zebracorn", "Seal the zebracorn vault", permissions="vault"))  # a shared group
    index = ts.Index(tools)
    box = ts.Toolbox(index, tiers=ts.ToolTierOptions(budget_tokens=2_000))
    shown = json.dumps([box.tools("openai"), box.plan()])
    assert "vault" not in shown and "zebracorn" not in shown and "seal" not in shown
    assert "- g0 (40 tools)" in box.tools("openai")[0]["function"]["description"]  # the hidden one not counted
    allowed = ts.Toolbox(index, caller=["vault"], tiers=ts.ToolTierOptions(budget_tokens=2_000))
    description = allowed.tools("openai")[0]["function"]["description"]
    assert "vault" in description and "- g0 (41 tools)" in description


def test_tool_search_with_a_group_finds_the_tools_in_it() -> None:
    tools = catalog(2_000, hidden=50)
    box = ts.Toolbox(ts.Index(tools), tiers=ts.ToolTierOptions(budget_tokens=2_000))

    def found(arguments: dict[str, Any]) -> list[str]:
        return [d["name"] for d in json.loads(box.call("tool_search", arguments))]

    everywhere = found({"query": "delete a queue", "limit": 5})
    assert everywhere and not all(n.startswith("g11__") for n in everywhere)
    in_group = found({"query": "delete a queue", "group": "g11", "limit": 5})
    assert in_group and all(n.startswith("g11__") for n in in_group)
    assert found({"query": "group:g11 delete a queue", "limit": 5}) == in_group
    assert found({"query": "", "group": "g3", "limit": 3}) == [t.name for t in tools[120:123]]
    assert found({"query": "unseal zebracorn", "group": "vault"}) == []  # hidden: as if it did not exist
    assert found({"query": "unseal zebracorn", "group": "no_such_group"}) == []
    with pytest.raises(ts.errors.InvalidParameterError):
        box.call("tool_search", {"query": "x", "group": 3})


TEXT = st.text(alphabet=st.sampled_from([*'ab_ "\\\n\t\x01é—😀', "Z", "q"]), max_size=12)
NAME = st.text(alphabet=st.sampled_from([*'ab_."\\é—😀', "Z", "q"]), max_size=6)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 5), NAME, TEXT, st.integers(1, 60)), min_size=1, max_size=60),
    st.integers(0, 2_500),
    st.sets(st.integers(0, 59), max_size=6),
    st.sets(st.integers(0, 59), max_size=3),
)
def test_measured_plans_equal_plans_counted_state_by_state(
    rows: list[tuple[int, str, str, int]], budget: int, core: set[int], pinned: set[int]
) -> None:
    """The default counter's arithmetic (running sums of escaped byte sizes) picks exactly the plan
    that building and counting every tested description picks, for any text JSON must escape."""
    tools = [ts.Tool(f"g{g}__t{i}{name}", description) for i, (g, name, description, _) in enumerate(rows)]
    size = {t.name: cost for t, (_, _, _, cost) in zip(tools, rows, strict=True)}
    names = [t.name for t in tools]
    start = {n: Tier.CORE if i in core | pinned else Tier.LISTED for i, n in enumerate(names)}
    held = {names[i] for i in pinned if i < len(names)}

    def plan(count: Any) -> Plan:
        planner = Planner(tools, dict(start), held, size, lambda n: len(n) % 3, count, default_group)
        return planner.plan(budget)

    measured, counted = plan(default_token_count), plan(lambda d: default_token_count(d))
    assert measured == counted
