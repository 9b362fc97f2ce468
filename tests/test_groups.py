"""Searches and selections limited to groups of tools, and the hierarchical step (the right
groups first, then tools inside them), on the botocore catalog: a group's search ranks exactly
the group's tools the caller may use, a group the caller may not use is never named or counted,
and every path (shared or per-caller statistics, loaded from a file, fused with a dense side)
agrees."""

from __future__ import annotations

import dataclasses
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

import toolsift as ts
from toolsift.catalogs import aws_catalog
from toolsift.plan import default_group

QUERIES = [
    "upload a file to a bucket",
    "list my running instances",
    "rotate the database password",
    "publish a message to a topic",
    "describe the autoscaling groups",
    "translate text from English to French",
    "delete an old snapshot",
]


@pytest.fixture(scope="module")
def tools() -> list[ts.Tool]:
    """Every 6th botocore operation (about 3,000, from some 400 services); each needs its
    service's permission."""
    return list(aws_catalog())[::6]


@pytest.fixture(scope="module")
def caller(tools: list[ts.Tool]) -> list[str]:
    """Every other service."""
    services = sorted({t.permissions[0] for t in tools})
    return services[::2]


@pytest.fixture(scope="module")
def index(tools: list[ts.Tool]) -> ts.Index:
    return ts.Index(tools)


def busiest_groups(tools: list[ts.Tool], caller: list[str], n: int = 3) -> list[str]:
    counts = Counter(default_group(t) for t in tools if set(t.permissions) <= set(caller))
    return [g for g, _ in counts.most_common(n)]


def test_groups_names_only_groups_holding_tools_the_caller_may_use(
    index: ts.Index, tools: list[ts.Tool], caller: list[str]
) -> None:
    want = Counter(default_group(t) for t in tools if set(t.permissions) <= set(caller))
    assert index.groups(caller=caller) == dict(sorted(want.items()))
    assert index.groups(caller=None) == {}  # every tool needs a permission
    hidden = {default_group(t) for t in tools} - set(want)
    assert hidden and not hidden & set(index.groups(caller=caller))


@pytest.mark.parametrize("query", QUERIES)
def test_a_search_within_groups_ranks_exactly_their_tools(
    index: ts.Index, tools: list[ts.Tool], caller: list[str], query: str
) -> None:
    groups = busiest_groups(tools, caller)
    everything = index.search(query, k=len(tools), caller=caller)
    for group in ([groups[0]], groups):
        want = [(h.position, h.score) for h in everything if default_group(h.tool) in group][:10]
        got = index.search(query, k=10, caller=caller, group=group[0] if len(group) == 1 else group)
        assert [(h.position, h.score) for h in got] == want


def test_a_group_the_caller_may_not_use_finds_nothing(index: ts.Index, tools: list[ts.Tool], caller: list[str]) -> None:
    forbidden = next(t for t in tools if not set(t.permissions) <= set(caller))
    group = default_group(forbidden)
    assert index.search(forbidden.description, k=10, caller=caller, group=group) == []
    assert index.search(forbidden.description, k=10, caller=caller, group="no such group") == []
    # it is found by a caller who holds its permission
    owner = [*caller, *forbidden.permissions]
    assert index.search(forbidden.description, k=50, caller=owner, group=group)


@pytest.mark.parametrize("query", QUERIES)
def test_a_hierarchical_selection_takes_tools_of_the_best_groups_only(
    index: ts.Index, tools: list[ts.Tool], caller: list[str], query: str
) -> None:
    ranked = index.search(query, k=100, caller=caller)
    best = list(dict.fromkeys(default_group(h.tool) for h in ranked))[:2]
    sel = index.select(query, caller=caller, budget_tokens=2000, groups=2)
    assert sel.names and {default_group(t) for t in sel.tools} <= set(best)
    # it is the selection limited to those groups by name
    assert sel == index.select(query, caller=caller, budget_tokens=2000, group=best)
    # and a selection within a group is what the caller's whole ranking holds of it, packed
    inside = [h.position for h in index.search(query, k=len(tools), caller=caller) if default_group(h.tool) in best]
    assert set(sel) <= set(inside)
    # packed in the order of the ranking within the groups: the best of them is taken first
    assert inside[0] in sel


def test_core_tools_stay_selected_within_a_group() -> None:
    tools = [
        ts.Tool("help", "Get help with anything", core=True),
        ts.Tool("s3__put_object", "Upload an object to a bucket"),
        ts.Tool("gcs__upload", "Upload an object to a bucket"),
        ts.Tool("vault__upload", "Upload an object to a bucket", permissions="vault"),
    ]
    index = ts.Index(tools)
    assert index.select("upload an object", group="gcs").names == ("help", "gcs__upload")
    assert index.select("put an object", groups=1).names == ("help", "s3__put_object")
    assert index.select("upload an object", group="vault").names == ("help",)
    assert index.select("nothing matches this", groups=1).names == ("help",)
    assert index.search("get help", group="s3") == []  # a search within a group has no core tools


def test_every_path_agrees_on_searches_within_groups(
    tools: list[ts.Tool], caller: list[str], index: ts.Index, tmp_path: Path
) -> None:
    isolated = ts.Index(tools, statistics="caller")
    index.save(tmp_path / "i.tsidx")
    loaded = ts.Index.load(tmp_path / "i.tsidx")
    allowed = [t for t in tools if set(t.permissions) <= set(caller)]
    alone = ts.Index(allowed)  # what per-caller statistics must equal
    groups = busiest_groups(tools, caller)
    for query in QUERIES:
        for group in (groups[0], groups):
            names = [h.tool.name for h in index.search(query, k=10, caller=caller, group=group)]
            assert [h.tool.name for h in loaded.search(query, k=10, caller=caller, group=group)] == names
            mine = [h.tool.name for h in isolated.search(query, k=10, caller=caller, group=group)]
            assert mine == [h.tool.name for h in alone.search(query, k=10, caller=caller, group=group)]
            assert loaded.select(query, caller=caller, budget_tokens=1500, group=group) == index.select(
                query, caller=caller, budget_tokens=1500, group=group
            )
            assert [
                isolated.name(i) for i in isolated.select(query, caller=caller, budget_tokens=1500, groups=1)
            ] == list(alone.select(query, caller=caller, budget_tokens=1500, groups=1).names)


def test_a_fused_ranking_is_limited_to_the_group_too() -> None:
    from test_dense import TOOLS, ConceptEmbedder

    grouped = [
        ts.Tool(("shop." if i % 2 else "mail.") + t.name, t.description, permissions=t.permissions)
        for i, t in enumerate(TOOLS)
    ]
    index = ts.Index(grouped, embedder=ConceptEmbedder())  # type: ignore[arg-type]
    for query in ("give the money back", "buy something", "send a letter"):
        hits = index.search(query, k=10, caller=["billing"], group="shop")
        assert hits and all(h.tool.name.startswith("shop.") for h in hits)
        everything = [h.tool.name for h in index.search(query, k=10, caller=["billing"])]
        assert [h.tool.name for h in hits] == [n for n in everything if n.startswith("shop.")]
        sel = index.select(query, caller=["billing"], groups=1)
        assert len({n.split(".")[0] for n in sel.names}) == 1


def test_a_custom_grouping_and_bad_arguments() -> None:
    tools = [ts.Tool(f"tool_{i}", f"Tool number {i} does thing {i % 3}") for i in range(9)]
    index = ts.Index(tools, group_by=lambda t: f"g{int(t.name.split('_')[1]) % 3}")
    assert index.groups() == {"g0": 3, "g1": 3, "g2": 3}
    assert {h.tool.name for h in index.search("tool number", k=9, group="g1")} == {"tool_1", "tool_4", "tool_7"}
    with pytest.raises(ts.errors.InvalidParameterError, match="groups"):
        index.select("tool", groups=0)
    with pytest.raises(ts.errors.InvalidParameterError, match="group"):
        index.search("tool", group=7)  # type: ignore[arg-type]
    with pytest.raises(ts.errors.InvalidParameterError, match="strings"):
        index.search("tool", group=["g1", 2])  # type: ignore[list-item]
    with pytest.raises(ts.errors.InvalidParameterError, match="group_by"):
        ts.Index(tools, group_by="name")  # type: ignore[arg-type]
    with pytest.raises(ts.errors.InvalidToolError) as e:  # when the index is built
        ts.Index(tools, group_by=lambda t: 3)  # type: ignore[arg-type,return-value]
    assert e.value.tool == "tool_0" and e.value.field == "group"


def test_selection_mode_of_a_toolbox_picks_groups_first(tools: list[ts.Tool], caller: list[str]) -> None:
    box = ts.Toolbox(ts.Catalog(tools), caller=caller)
    messages = [{"role": "user", "content": "upload a file to a bucket"}]
    names = [t["function"]["name"] for t in box.select(messages, budget_tokens=2000, groups=1)]
    assert names and len({n.split("__")[0] for n in names}) == 1
    by_name = {t.name: t for t in tools}
    assert all(set(by_name[n].permissions) <= set(caller) for n in names)
    assert np.all(np.diff([box.index.names.index(n) for n in names]) > 0)  # registry order
    assert names == [
        t["function"]["name"] for t in box.select(messages, budget_tokens=2000, group=names[0].split("__")[0])
    ]


def test_tool_search_within_a_group_follows_the_index_grouping() -> None:
    tools = [ts.Tool(f"tool_{i}", f"Rotate the key number {i}") for i in range(12)]
    index = ts.Index(tools, group_by=lambda t: "even" if int(t.name.split("_")[1]) % 2 == 0 else "odd")
    box = ts.Toolbox(index, tiers=ts.ToolTierOptions(budget_tokens=400))
    import json

    found = [
        d["name"] for d in json.loads(box.call("tool_search", {"query": "rotate key", "group": "odd", "limit": 3}))
    ]
    assert found == [h.tool.name for h in index.search("rotate key", k=3, group="odd")]
    assert found and all(int(n.split("_")[1]) % 2 for n in found)


def test_tool_search_within_a_group_of_the_tiers_own_grouping() -> None:
    def team(t: ts.Tool) -> str:  # a grouping the index does not know
        return "team" + str(int(t.name.split("_")[-1]) % 3)

    tools = [
        ts.Tool(f"svc{i % 4}__rotate_{i}", f"Rotate the key number {i}", permissions="admin" if i % 5 == 0 else ())
        for i in range(30)
    ]
    index = ts.Index(tools)
    box = ts.Toolbox(index, tiers=ts.ToolTierOptions(budget_tokens=400, group=team), caller=["user"])
    ranked = [h.tool.name for h in index.search("rotate key 4", k=30, caller=["user"])]
    expected = [n for n in ranked if team(index.get(n)) == "team1"][:4]
    found = [t.name for t in box.search_tools({"query": "rotate key 4", "group": "team1", "limit": 4})]
    assert found == expected and len(found) == 4
    browsed = [t.name for t in box.search_tools({"query": "", "group": "team1", "limit": 20})]
    assert browsed == [t.name for t in tools if team(t) == "team1" and not t.permissions]  # registry order
    assert box.search_tools({"query": "rotate key", "group": "team9", "limit": 4}) == []
    assert box.search_tools({"query": "rotate key", "group": "svc1", "limit": 4}) == []  # not the index's


@pytest.mark.parametrize("tiers", [None, ts.ToolTierOptions(budget_tokens=400)])
def test_browsing_a_group_lists_its_tools_the_caller_may_use_in_registry_order(
    tiers: ts.ToolTierOptions | None,
) -> None:
    tools = [ts.Tool(f"s3__op{i}", f"Object operation {i}", permissions="s3" if i % 3 else "admin") for i in range(9)]
    tools += [ts.Tool(f"ec2__op{i}", f"Instance operation {i}", permissions="ec2") for i in range(4)]
    box = ts.Toolbox(ts.Catalog(tools), tiers=tiers, caller=["s3", "ec2"])
    browsed = [t.name for t in box.search_tools({"query": "", "group": "s3", "limit": 4})]
    assert browsed == ["s3__op1", "s3__op2", "s3__op4", "s3__op5"]  # s3__op0, s3__op3: admin only
    ranked = [t.name for t in box.search_tools({"query": "object operation", "group": "s3", "limit": 20})]
    assert sorted(ranked) == sorted(n for n in (t.name for t in tools[:9]) if not n.endswith(("op0", "op3", "op6")))
    assert box.index.allowed_positions(caller=["ec2"], group="s3").tolist() == []
    assert box.index.allowed_positions(caller=["ec2"]).tolist() == [9, 10, 11, 12]


def test_a_core_tool_never_takes_the_place_of_a_group_in_a_hierarchical_selection() -> None:
    tools = [
        ts.Tool("help__refund_orders_faq", "refund orders: answers about refund orders", core=True, cost_tokens=10),
        ts.Tool("billing__issue_credit", "refund an order payment", cost_tokens=10),
        ts.Tool("billing__credit_status", "status of a refund", cost_tokens=10),
        ts.Tool("shop__list_orders", "list orders", cost_tokens=10),
    ]
    index = ts.Index(tools)
    assert index.search("refund orders", k=1)[0].tool.name == "help__refund_orders_faq"  # ranks first
    assert index.select("refund orders", groups=1).names == (
        "help__refund_orders_faq",
        "billing__issue_credit",
        "billing__credit_status",
    )


@pytest.mark.parametrize("statistics", ["shared", "caller"])
def test_core_tools_a_caller_may_not_use_do_not_change_the_groups_it_selects_from(statistics: str) -> None:
    """The group step fetched depth + every core tool of the catalog, hidden ones included, so
    each admin-only core tool brought one more candidate, and sometimes one more group, into a
    public caller's selection: a caller could count core tools it may not see."""

    def catalog(hidden: int) -> list[ts.Tool]:
        tools = [ts.Tool("help__search", "search help", core=True)]
        tools += [ts.Tool(f"a__refund{i}", "refund order refund") for i in range(3)]
        tools += [ts.Tool("b__refund", "refund things and other words here")]
        return tools + [ts.Tool(f"secret__c{i}", "admin", core=True, permissions="admin") for i in range(hidden)]

    picks = {
        ts.Index(catalog(n), depth=2, statistics=statistics).select("refund order", groups=2).names for n in (0, 1, 5)
    }
    assert len(picks) == 1
    admin = ts.Index(catalog(1), depth=2, statistics=statistics).select("refund order", groups=2, caller="admin")
    assert "secret__c0" in admin.names  # the admin's own core tool is still sent


def test_a_depth_past_the_core_limit_selects_by_group_without_overflow() -> None:
    index = ts.Index(
        [ts.Tool("help__search", "search help", core=True), ts.Tool("a__refund", "refund order")], depth=2**64 - 1
    )
    assert index.select("refund", groups=1).names == ("help__search", "a__refund")


def test_a_group_by_that_fails_fails_the_build_not_a_callers_first_grouped_query() -> None:
    """It ran on the first grouped query, of any caller, whose error named another caller's
    tool; an exception of group_by itself came out raw."""
    tools = [ts.Tool("pub__a", "a"), ts.Tool("admin__nuke_all_data", "nuke", permissions="admin")]
    with pytest.raises(ts.errors.InvalidToolError, match="admin__nuke_all_data") as e:
        ts.Index(tools, group_by=lambda t: None if t.permissions else "pub")  # type: ignore[arg-type,return-value]
    assert e.value.field == "group"
    with pytest.raises(ts.errors.InvalidToolError, match="group_by raised KeyError") as e:
        ts.Index(tools, group_by=lambda t: {"pub__a": "pub"}[t.name])
    assert e.value.tool == "admin__nuke_all_data"


def test_every_aws_operation_has_a_name_each_api_takes_in_its_services_group() -> None:
    catalog = aws_catalog()
    shortened = [t for t in catalog if t.title is not None]
    assert shortened, "botocore has operations whose service__Operation runs past 64 characters"
    assert len(ts.to_openai(catalog)) == len(ts.to_anthropic(catalog)) == len(catalog)  # none refused
    for t in shortened:
        service = t.permissions[0].removeprefix("aws:")
        assert len(t.name) == 64 and default_group(t) == service
        assert t.name.startswith(f"{service}__{t.title[:10]}") and len(f"{service}__{t.title}") > 64
        assert t.search_text.endswith(f" {t.title}")  # the words cut from the name are still searched
    ec2 = [t.title for t in shortened if t.permissions == ("aws:ec2",)]
    assert "DescribeLocalGatewayRouteTableVirtualInterfaceGroupAssociations" in ec2


def test_a_shortened_name_keeps_its_service_however_long() -> None:
    from toolsift.catalogs import MAX_NAME, tool_name

    assert tool_name("s3", "PutObject") == ("s3__PutObject", None)
    for service in ("ec2", "s" * 35, "s" * 50, "s" * 80):
        name, title = tool_name(service, "Describe" + "Long" * 20)
        assert len(name) == MAX_NAME and title == "Describe" + "Long" * 20
        assert name.count("__") == 1 and default_group(ts.Tool(name)).startswith(service[:20])
        short, _ = tool_name(service, "List")  # one group for all of a service's operations
        assert default_group(ts.Tool(short)) == default_group(ts.Tool(name))
    assert tool_name("svc", "A" * 80)[0] != tool_name("svc", "A" * 81)[0]  # same start, two names


def test_each_intent_of_a_compound_request_gets_its_group_among_the_first() -> None:
    tools = [dataclasses.replace(t, permissions=()) for t in aws_catalog()]
    request = "Delete a bucket. Then create a DynamoDB table."
    whole_only = ts.Index(tools, intents=False)  # groups chosen by the whole request's ranking alone
    assert "s3" not in {default_group(h.tool) for h in whole_only.search(request, k=10, groups=2)}
    index = ts.Index(tools)
    found = [h.tool.name for h in index.search(request, k=10, groups=2)]
    assert {n.split("__")[0] for n in found} == {"dynamodb", "s3"}
    assert {"s3__DeleteBucket", "dynamodb__CreateTable"} <= set(found)
    selected = {t.name for t in index.select(request, groups=2, budget_tokens=8000).tools}
    assert {"s3__DeleteBucket", "dynamodb__CreateTable"} <= selected
