"""Tool tiers and the Toolbox: the seed's three examples, and the permission guarantees."""

from __future__ import annotations

import json
import re
import sys
import threading
from typing import Any

import pytest

import toolsift as ts
from toolsift.errors import InvalidParameterError, InvalidToolError, UnknownToolError
from toolsift.plan import Tier
from toolsift.tiers import Hooks, MissingHandlerError, Toolbox, ToolEvent, ToolTierOptions

WEATHER_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["function"]["name"] for t in tools]


def test_only_core_schemas_go_out_and_tool_search_names_the_rest() -> None:
    catalog = ts.Catalog(
        [
            ts.Tool("read_file", "Read a file"),
            ts.Tool("weather", "Current weather for a city"),
            ts.Tool("stocks", "Stock quote"),
        ]
    )
    box = Toolbox(catalog, tiers=ToolTierOptions(core=["read_file"], deferred=["stocks"]))
    tools = box.tools()
    assert names(tools) == ["read_file", "tool_search", "call_tool"]
    search = tools[1]["function"]["description"]
    assert "weather" in search and "stocks" in search
    assert "- weather — Current weather for a city" in search
    assert box.plan() == {"read_file": Tier.CORE, "weather": Tier.LISTED, "stocks": Tier.DEFERRED}
    assert tools == box.tools()  # byte-identical across turns
    assert [t["name"] for t in box.tools("anthropic")] == ["read_file", "tool_search", "call_tool"]


def test_search_then_call_tool_runs_the_real_tool_and_the_hook_sees_only_it() -> None:
    catalog = ts.Catalog([ts.Tool("weather", "Current weather for a city", WEATHER_SCHEMA)])
    gated: list[ToolEvent] = []
    box = Toolbox(
        catalog,
        tiers=ToolTierOptions(),
        handlers={"weather": lambda a: f"sunny in {a['city']}"},
        hooks=Hooks(before_tool=gated.append),
    )
    found = json.loads(box.call("tool_search", {"query": "select:weather"}))
    assert found == [{"name": "weather", "description": "Current weather for a city", "parameters": WEATHER_SCHEMA}]
    out = box.call("call_tool", {"name": "weather", "arguments": {"city": "Paris"}})
    assert out == "sunny in Paris"
    assert [(e.name, e.via) for e in gated] == [("weather", "call_tool")]


def test_budget_demotes_the_least_used_core_tools_and_the_plan_is_frozen_until_reset() -> None:
    tools = [ts.Tool(n, f"Tool {n} " + "x" * 200) for n in ("alpha", "beta", "gamma")]
    usage = {"alpha": 10, "beta": 1, "gamma": 5}
    opts = ToolTierOptions(
        core=["alpha", "beta", "gamma"],
        budget_tokens=300,
        count_tokens=lambda d: 100,
        usage_count=lambda n: usage.get(n, 0),
    )
    box = Toolbox(ts.Catalog(tools), tiers=opts)
    first = box.plan()
    assert first["alpha"] is Tier.CORE and first["beta"] is not Tier.CORE
    usage["beta"] = 100
    assert box.plan()["beta"] == first["beta"]
    box.reset()
    assert box.plan()["beta"] is Tier.CORE


def test_ties_in_usage_demote_the_larger_schema_then_by_name() -> None:
    tools = [ts.Tool("aa", "x"), ts.Tool("bb", "y" * 400), ts.Tool("cc", "z")]
    opts = ToolTierOptions(core=["aa", "bb", "cc"], budget_tokens=1)
    assert ToolTierOptions().effective_budget_tokens() == 128_000 // 20
    plan = Toolbox(ts.Catalog(tools), tiers=opts).plan()
    assert set(plan.values()) == {Tier.DEFERRED}  # nothing fits: core to listed, then listed to deferred


def test_a_caller_never_sees_a_forbidden_tool_anywhere() -> None:
    catalog = ts.Catalog(
        [
            ts.Tool("read_file", "Read a file"),
            ts.Tool("wire_money", "Wire money abroad", permissions="treasury"),
            ts.Tool("weather", "Current weather for a city"),
        ]
    )
    box = Toolbox(
        catalog, tiers=ToolTierOptions(core=["read_file", "wire_money"]), handlers={"wire_money": lambda a: "sent"}
    )
    shown = json.dumps([box.tools(), box.plan(), box.call("tool_search", {"query": "wire money abroad"})])
    shown += box.call("tool_search", {"query": "select:wire_money,weather"})
    assert "wire_money" not in shown and "weather" in shown
    errors = []
    for name in ("wire_money", "no_such_tool"):
        for call in (
            lambda n=name: box.call(n, {}),
            lambda n=name: box.call("call_tool", {"name": n, "arguments": {}}),
        ):
            with pytest.raises(UnknownToolError) as e:
                call()
            errors.append(str(e.value).replace(name, "NAME"))
    assert len(set(errors)) == 1
    allowed = Toolbox(catalog, caller=["treasury"], tiers=ToolTierOptions(), handlers={"wire_money": lambda a: "sent"})
    assert allowed.call("call_tool", {"name": "wire_money", "arguments": {}}) == "sent"


def test_a_hook_can_refuse_and_a_missing_handler_is_a_clear_error() -> None:
    def deny(event: ToolEvent) -> None:
        raise PermissionError(f"{event.name} needs approval")

    catalog = ts.Catalog([ts.Tool("delete_all", "Delete everything"), ts.Tool("ping", "Ping")])
    box = Toolbox(
        catalog, tiers=ToolTierOptions(), hooks=Hooks(before_tool=deny), handlers={"delete_all": lambda a: "gone"}
    )
    with pytest.raises(PermissionError):
        box.call("delete_all", {})
    with pytest.raises(MissingHandlerError):
        Toolbox(catalog).call("ping", {})


def test_selection_mode_keeps_tools_used_in_the_session() -> None:
    catalog = ts.Catalog([ts.Tool("order_status", "Order shipping status"), ts.Tool("refund", "Refund a payment")])
    box = Toolbox(catalog, handlers={"refund": lambda a: "ok"})
    assert names(box.select([{"role": "user", "content": "where is my order"}])) == ["order_status"]
    box.call("refund", {})
    assert names(box.select([{"role": "user", "content": "where is my order"}])) == ["order_status", "refund"]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_usage_pins_after_warm_up_ages_with_its_half_life_and_moves_only_at_reset(tmp_path) -> None:  # type: ignore[no-untyped-def]
    clock = Clock()
    store = ts.UsageStore(tmp_path / "usage.sqlite", half_life_s=100.0, warmup=2, clock=clock)
    tools = [ts.Tool(n, f"Tool {n}") for n in ("alpha", "beta", "gamma")]
    opts = ToolTierOptions(
        core=["alpha", "beta", "gamma"],
        budget_tokens=300,
        count_tokens=lambda d: 100,
        usage_count=store.usage_count("ann"),
    )
    handlers = {n: (lambda a: "ok") for n in ("alpha", "beta", "gamma")}
    box = Toolbox(ts.Catalog(tools), tiers=opts, handlers=handlers, usage=store, user="ann")
    assert box.plan()["alpha"] is not Tier.CORE  # no usage yet: ties demote by name
    box.call("call_tool", {"name": "alpha", "arguments": {}})
    assert store.score("ann", "alpha") == 0.0  # one call: still warming up
    box.call("alpha", {})
    assert store.score("ann", "alpha") == pytest.approx(2.0)
    assert box.plan()["alpha"] is not Tier.CORE  # the plan is frozen
    box.reset()
    assert box.plan()["alpha"] is Tier.CORE
    clock.now += 100.0
    assert store.score("ann", "alpha") == pytest.approx(1.0)  # one half-life later
    assert store.score("bob", "alpha") == 0.0  # per user


def test_toolboxes_without_a_user_record_usage_per_caller_and_an_explicit_user_pools_it() -> None:
    import hashlib

    store = ts.UsageStore(warmup=0, clock=Clock())
    tools = [ts.Tool(n, f"Tool {n}") for n in ("alpha", "beta", "gamma")]
    handlers = {t.name: (lambda a: "ok") for t in tools}
    opts = ToolTierOptions(core=["alpha", "beta", "gamma"], budget_tokens=300, count_tokens=lambda d: 100)
    ann = Toolbox(ts.Catalog(tools), tiers=opts, caller=["sales", "crm"], handlers=handlers, usage=store)
    bob = Toolbox(ts.Catalog(tools), tiers=opts, caller=["support"], handlers=handlers, usage=store)
    for _ in range(5):
        ann.call("alpha", {})
    bob.call("gamma", {})
    # the key: "caller:" + SHA-256 of the JSON list of the sorted permissions, the same in every process
    digest = hashlib.sha256(json.dumps(["crm", "sales"]).encode()).hexdigest()
    assert ann.user == f"caller:{digest}" == Toolbox(ts.Catalog(tools), caller=("crm", "sales", "crm")).user
    assert ann.user != bob.user
    assert (store.score(ann.user, "alpha"), store.score(bob.user, "alpha")) == (5.0, 0.0)
    assert (store.score(ann.user, "gamma"), store.score(bob.user, "gamma")) == (0.0, 1.0)
    # so ann's calls do not move bob's pins
    bob.tiers = ToolTierOptions(**{**vars(opts), "usage_count": store.usage_count(bob.user)})
    bob.reset()
    assert [n for n, t in bob.plan().items() if t is Tier.CORE] == ["gamma"]
    # an explicit user pools the usage of every toolbox that names it
    team = [Toolbox(ts.Catalog(tools), caller=c, handlers=handlers, usage=store, user="team") for c in ("a", "b")]
    team[0].call("beta", {})
    team[1].call("beta", {})
    assert store.score("team", "beta") == 2.0 and team[0].user == "team"


@pytest.mark.parametrize("reserved", ["tool_search", "call_tool"])
def test_a_tiered_toolbox_refuses_a_tool_named_like_its_meta_tools(reserved: str) -> None:
    catalog = ts.Catalog([ts.Tool("alpha", "A"), ts.Tool(reserved, "An impostor")])
    with pytest.raises(InvalidToolError) as e:
        Toolbox(catalog, tiers=ToolTierOptions(core=["alpha", reserved]))
    assert (e.value.tool, e.value.field) == (reserved, "name") and "reserved" in str(e.value)
    # without tiers there is no meta-tool, and the name is a name like any other
    assert sorted(names(Toolbox(catalog).tools())) == ["alpha", reserved]
    # a caller that may not use the tool is not told about it, and gets the meta-tools
    hidden = ts.Catalog([ts.Tool("alpha", "A"), ts.Tool(reserved, "An impostor", permissions="admin")])
    box = Toolbox(hidden, tiers=ToolTierOptions(core=["alpha", reserved]))
    assert names(box.tools()) == ["alpha", "tool_search", "call_tool"]
    with pytest.raises(InvalidToolError):
        Toolbox(hidden, tiers=ToolTierOptions(), caller="admin")


def test_manual_pins_always_win_over_usage_and_budget() -> None:
    tools = [ts.Tool(n, f"Tool {n}") for n in ("alpha", "beta", "gamma")]
    usage = {"alpha": 50, "beta": 0, "gamma": 9}
    opts = ToolTierOptions(
        core=["alpha", "gamma"], pinned=["beta"], budget_tokens=300, count_tokens=lambda d: 100, usage_count=usage.get
    )
    plan = Toolbox(ts.Catalog(tools), tiers=opts).plan()
    assert plan["beta"] is Tier.CORE and plan["alpha"] is not Tier.CORE and plan["gamma"] is not Tier.CORE


def test_anthropic_hosted_search_defers_all_but_core_and_references_name_found_tools() -> None:
    catalog = ts.Catalog(
        [
            ts.Tool("read_file", "Read a file"),
            ts.Tool("weather", "Current weather"),
            ts.Tool("vault", "Open", permissions="x"),
        ]
    )
    box = Toolbox(catalog, tiers=ToolTierOptions(core=["read_file"]))
    hosted = box.hosted_search_tools()
    assert [(t["name"], t.get("defer_loading", False)) for t in hosted] == [("read_file", False), ("weather", True)]
    assert box.search_references("current weather") == [{"type": "tool_reference", "tool_name": "weather"}]
    assert box.search_references("open vault") == []


TOOLS = [ts.Tool("weather", "Current weather for a city", WEATHER_SCHEMA), ts.Tool("search_docs", "Search the docs")]


class BrokenUsage(ts.UsageStore):
    """A usage store whose writes fail (a locked or full database) after the call ran."""

    def record(self, user: str, tool: str) -> None:
        raise OSError("disk full")


def test_a_call_that_ran_returns_its_result_when_its_usage_cannot_be_recorded(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[dict[str, Any]] = []
    box = Toolbox(
        ts.Catalog(TOOLS), handlers={"weather": lambda args: ran.append(dict(args)) or "sunny"}, usage=BrokenUsage()
    )
    with caplog.at_level("WARNING", logger="toolsift.tiers"):
        assert box.call("weather", {"city": "Oslo"}) == "sunny"  # not an error the model would retry
    assert ran == [{"city": "Oslo"}] and "usage of 'weather' not recorded" in caplog.text


def test_a_user_key_the_usage_store_would_refuse_is_refused_before_any_call() -> None:
    with pytest.raises(InvalidParameterError, match="user holds a lone surrogate"):
        Toolbox(ts.Catalog(TOOLS), user="alice\ud800")


def test_the_name_checked_is_the_name_whose_handler_runs() -> None:
    class Lying(str):  # equal to and hashed like another name: only Python code can pass one
        def __eq__(self, other: object) -> bool:
            return other == "search_docs" or str.__eq__(self, other)

        def __hash__(self) -> int:
            return hash("search_docs")

    ran: list[str] = []
    handlers = {n: (lambda args, n=n: ran.append(n)) for n in ("weather", "search_docs")}
    box = Toolbox(ts.Catalog(TOOLS), handlers=handlers)  # type: ignore[arg-type]
    box.call(Lying("weather"), {})
    assert ran == ["weather"]
    assert box.index.get(Lying("weather")).name == "weather"


def test_tools_used_in_the_session_are_charged_to_the_selection_budget_first() -> None:
    catalog = ts.Catalog(
        [
            ts.Tool("order_status", "Order shipping status", cost_tokens=40),
            ts.Tool("export_report", "Export the order report", cost_tokens=50),
            ts.Tool("refund_order", "Refund an order payment", cost_tokens=60),
        ]
    )
    box = Toolbox(catalog, handlers={"refund_order": lambda a: "ok"})
    turn = [{"role": "user", "content": "order status or the order report"}]
    assert names(box.select(turn, budget_tokens=100)) == ["order_status", "export_report"]
    box.call("refund_order", {})
    chosen = names(box.select(turn, budget_tokens=100))
    assert "refund_order" in chosen and sum(box.index.get(n).cost_tokens or 0 for n in chosen) <= 100
    assert names(box.select(turn, budget_tokens=10)) == ["refund_order"]  # used stays, even past it
    assert names(box.select(turn)) == ["order_status", "export_report", "refund_order"]  # no limit


@pytest.mark.parametrize(
    ("options", "says"),
    [
        ({"pinned": "read_file"}, "ToolTierOptions.pinned must be a list of tool names, not str"),
        ({"core": "read_file"}, "ToolTierOptions.core must be a list of tool names, not str"),
        ({"deferred": None}, "ToolTierOptions.deferred must be a list of tool names"),
        ({"core": ["read_file", 3]}, "ToolTierOptions.core must hold tool names"),
        ({"budget_tokens": "4000"}, "ToolTierOptions.budget_tokens must be an int"),
        ({"budget_tokens": -1}, "ToolTierOptions.budget_tokens must be >= 0"),
        ({"context_window": 0}, "ToolTierOptions.context_window must be >= 1"),
        ({"usage_count": {"read_file": 3}}, "ToolTierOptions.usage_count must be a function or None"),
    ],
)
def test_bad_tier_options_are_refused_naming_the_option(options: dict[str, Any], says: str) -> None:
    with pytest.raises(InvalidParameterError, match=re.escape(says)):
        ToolTierOptions(**options)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"count_tokens": lambda d: float("nan")}, "count_tokens"),
        ({"count_tokens": lambda d: None}, "count_tokens"),
        ({"count_tokens": lambda d: -1000}, "count_tokens"),
        ({"usage_count": {"read_file": 3}.get}, "usage_count"),  # None for the others
    ],
)
def test_a_tier_function_answering_a_non_count_is_a_typed_error_naming_tool_and_field(
    options: dict[str, Any], field: str
) -> None:
    catalog = ts.Catalog([ts.Tool("read_file", "Read a file"), ts.Tool("weather", "Current weather")])
    box = Toolbox(catalog, tiers=ToolTierOptions(budget_tokens=50, **options))
    with pytest.raises(InvalidToolError) as raised:
        box.tools()
    assert raised.value.field == field and raised.value.tool in ("read_file", "weather", "tool_search", "call_tool")


def test_a_toolbox_shared_by_threads_counts_every_call_and_selects_while_they_run() -> None:
    catalog = ts.Catalog([ts.Tool(f"t{i}", f"tool number {i}") for i in range(50)])
    box = Toolbox(catalog, handlers={f"t{i}": (lambda a: "ok") for i in range(50)})
    errors: list[BaseException] = []

    def calls(offset: int) -> None:
        try:
            for i in range(2000):
                box.call(f"t{(i + offset) % 50}", {})
        except BaseException as e:  # reported by the assertion below
            errors.append(e)

    def selects() -> None:
        try:
            for _ in range(300):
                box.select([{"role": "user", "content": "tool number 7"}])
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=calls, args=(n,)) for n in range(4)] + [threading.Thread(target=selects)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch often, as on a busy server
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(interval)
    assert errors == [] and sum(box.used.values()) == 8000


def test_a_tool_marked_core_is_sent_in_full_and_never_demoted_by_a_tiered_toolbox() -> None:
    catalog = ts.Catalog(
        [
            ts.Tool("search_help", "Search the help center", core=True, cost_tokens=300),
            ts.Tool("order_status", "Order shipping status", cost_tokens=40),
        ]
    )
    box = Toolbox(catalog, tiers=ToolTierOptions(budget_tokens=100))  # too small for it: kept anyway
    assert box.plan()["search_help"] is Tier.CORE
    assert names(box.tools()) == ["search_help", "tool_search", "call_tool"]
    assert [(t["name"], t.get("defer_loading", False)) for t in box.hosted_search_tools()] == [
        ("search_help", False),
        ("order_status", True),
    ]


def test_errors_about_a_tool_carry_tool_and_field() -> None:
    box = Toolbox(ts.Catalog([ts.Tool("refund", "Refund a payment")]))
    with pytest.raises(MissingHandlerError) as missing:
        box.call("refund", {})
    with pytest.raises(UnknownToolError) as unknown:
        box.call("nope", {})
    assert (missing.value.tool, missing.value.field) == ("refund", None)
    assert (unknown.value.tool, unknown.value.field) == ("nope", None)


@pytest.mark.parametrize(
    ("part", "value"),
    [
        ("tiers", {"core": ["a"]}),
        ("handlers", [lambda args: 1]),
        ("handlers", {"ping": "pong"}),
        ("hooks", lambda event: None),
        ("hooks", ts.Hooks(before_tool="log")),  # type: ignore[arg-type]
        ("usage", "usage.sqlite"),
    ],
)
def test_parts_of_the_wrong_kind_are_refused_when_the_toolbox_is_made(part: str, value: object) -> None:
    """They failed with raw AttributeError / TypeError on the first call, after before_tool had
    seen it, or (a path as `usage`) ran every call and counted none of them."""
    with pytest.raises(InvalidParameterError, match=part.rstrip("s") if part != "hooks" else "ooks"):
        ts.Toolbox(ts.Catalog([ts.Tool("ping", "Answer pong")]), **{part: value})  # type: ignore[arg-type]


def test_a_used_tool_the_selection_takes_again_is_charged_once() -> None:
    """The used tools' cost came off the budget, then the selection could take one of them
    again and charge it a second time: 100 tokens of a 300 budget went unused."""
    tools = [ts.Tool(n, f"Order {n} report", cost_tokens=100) for n in ("alpha", "beta", "gamma", "delta")]
    box = Toolbox(ts.Catalog(tools), handlers={"alpha": lambda a: "ok"})
    turn = [{"role": "user", "content": "order alpha report"}]
    assert names(box.select(turn, budget_tokens=300)) == ["alpha", "beta", "gamma"]
    box.call("alpha", {})
    assert names(box.select(turn, budget_tokens=300)) == ["alpha", "beta", "gamma"]  # was ["alpha", "beta"]
    assert names(box.select(turn, budget_tokens=250)) == ["alpha", "beta"]  # never over the budget


def test_a_lookup_by_name_gives_each_tool_once_and_at_most_limit() -> None:
    box = Toolbox(ts.Catalog([ts.Tool("a", "Tool a"), ts.Tool("b", "Tool b")]))
    found = box.search_tools({"query": "select:a,a,b,a", "limit": 5})
    assert [t.name for t in found] == ["a", "b"]
    assert [t.name for t in box.search_tools({"query": "select:b,a", "limit": 1})] == ["b"]
    many = Toolbox(ts.Catalog([ts.Tool(f"t{i}", f"Tool {i}") for i in range(8)]))
    asked = ",".join(f"t{i}" for i in range(8))
    assert len(many.search_tools({"query": f"select:{asked}"})) == 8  # no limit given: every name


def test_an_owners_counter_or_group_function_that_raises_names_the_tool() -> None:
    tools = [ts.Tool("alpha", "Tool alpha"), ts.Tool("beta", "Tool beta")]

    def counter(definition: dict) -> int:  # type: ignore[type-arg]
        return {"alpha": 10}[definition["name"]]

    with pytest.raises(InvalidToolError) as e:
        ts.Index(tools, count_tokens=counter)
    assert e.value.tool == "beta" and "KeyError" in str(e.value)
    for group in (lambda t: t.name[9], lambda t: None):
        with pytest.raises(InvalidToolError) as e:
            Toolbox(ts.Catalog(tools), tiers=ToolTierOptions(budget_tokens=100, group=group)).tools()
        assert e.value.tool == "alpha" and e.value.field == "group"
    with pytest.raises(InvalidToolError) as e:
        Toolbox(ts.Catalog(tools), tiers=ToolTierOptions(budget_tokens=100, count_tokens=counter)).tools()
    assert e.value.tool == "beta"
