"""The PydanticAI adapter, run end to end by PydanticAI's Agent with its own FunctionModel."""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, RunContext, RunUsage, Tool
from pydantic_ai.capabilities import PrepareTools
from pydantic_ai.exceptions import ModelRetry
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import toolsift as ts
from helpers import readme_block, readme_toolbox_prelude
from toolsift.errors import InvalidParameterError, InvalidToolError
from toolsift.integrations.pydantic_ai import (
    ToolsiftToolset,
    prepare_tools,
    search_strategy,
    to_messages,
    tool_search,
)

CATALOG = ts.Catalog(
    [
        ts.Tool("search_help", "Search the help center articles", core=True),
        ts.Tool("order_status", "Get the shipping status of an order", permissions="orders.read"),
        ts.Tool("issue_refund", "Refund a customer order payment", permissions="billing.refund"),
        ts.Tool("refund_policy", "Explain the refund policy to the customer"),
    ]
)


def toolbox(ran: list[str], caller: Any = ("orders.read",), tiers: bool = True, **kw: Any) -> ts.Toolbox:
    """A toolbox whose every handler records its tool's name in ``ran``."""
    handlers = {t.name: (lambda args, n=t.name: ran.append(n) or f"{n} done") for t in CATALOG}
    options = ts.ToolTierOptions(core=["search_help"]) if tiers else None
    return ts.Toolbox(CATALOG, caller=caller, tiers=options, handlers=handlers, **kw)


class Script:
    """A FunctionModel function: answers each step with the next scripted parts and records what
    the step offered (tool names) and what the model was told last."""

    def __init__(self, *steps: list[Any]) -> None:
        self.steps, self.tools, self.definitions, self.last = list(steps), [], [], []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.tools.append([t.name for t in info.function_tools])
        self.definitions.append(info.function_tools)
        self.last.append(messages[-1].parts)
        return ModelResponse(parts=self.steps.pop(0))

    def said(self, step: int) -> str:
        """What the model was told before ``step`` (tool returns, retry prompts), as text."""
        return " ".join(str(getattr(p, "content", "")) for p in self.last[step])


def test_tool_search_finds_deferred_tools_by_toolsift_ranking_and_loads_them() -> None:
    ran: list[str] = []
    seen: list[tuple[str, str | None]] = []
    box = toolbox(ran, hooks=ts.Hooks(before_tool=lambda e: seen.append((e.name, e.via))))
    script = Script(
        [ToolCallPart("search_tools", {"queries": ["shipped orders"]})],  # stems: no keyword overlap
        [ToolCallPart("order_status", {"order": "A1"})],
        [TextPart("It has shipped.")],
    )
    agent = Agent(
        FunctionModel(script), deps_type=ts.Toolbox, toolsets=[ToolsiftToolset()], capabilities=[tool_search()]
    )
    result = agent.run_sync("where is my order?", deps=box)
    assert result.output == "It has shipped."
    assert script.tools[0] == ["search_help", "search_tools"]  # the core tier loaded, the rest deferred
    assert "order_status" in script.tools[1] and "'order_status'" in script.said(1)
    assert "order_status done" in script.said(2)
    assert ran == ["order_status"] and box.used == {"order_status": 1} and seen == [("order_status", None)]


def test_a_catalog_tool_named_like_pydantic_ais_search_tool_is_refused_when_the_capability_is_made() -> None:
    """Every run failed with PydanticAI's UserError once a search was on; the clash is now named
    when the capability is made. A caller who may not use such a tool is unaffected."""
    catalog = ts.Catalog([*CATALOG, ts.Tool("search_tools", "Search the tool shop's stock", permissions="shop")])
    with pytest.raises(InvalidToolError) as e:
        tool_search(ts.Toolbox(catalog, caller=["shop"]))
    assert (e.value.tool, e.value.field) == ("search_tools", "name")
    tool_search(ts.Toolbox(catalog, caller=["orders.read"]))  # it never sees that tool


def test_the_default_keyword_search_misses_what_toolsift_finds() -> None:
    box = toolbox([])
    script = Script([ToolCallPart("search_tools", {"queries": ["shipped orders"]})], [TextPart("?")])
    Agent(FunctionModel(script), toolsets=[ToolsiftToolset(box)]).run_sync("where is my order?")
    assert "order_status" not in script.said(1)  # PydanticAI's own keyword overlap: no match


def test_a_forbidden_tool_is_never_listed_found_or_run() -> None:
    ran: list[str] = []
    script = Script(
        [ToolCallPart("search_tools", {"queries": ["refund the order payment"]})],
        [ToolCallPart("issue_refund", {})],
        [TextPart("I cannot refund that.")],
    )
    box = toolbox(ran)
    agent = Agent(FunctionModel(script), toolsets=[ToolsiftToolset(box)], capabilities=[tool_search(box)])
    agent.run_sync("refund my order")
    assert "refund_policy" in script.said(1) and "issue_refund" not in script.said(1)
    assert "Unknown tool name: 'issue_refund'" in script.said(2)
    assert ran == []
    for definitions in script.definitions:
        sent = json.dumps([[d.name, d.description, d.parameters_json_schema] for d in definitions])
        assert "issue_refund" not in sent


def test_the_toolset_rechecks_the_permission_on_every_call() -> None:
    ran: list[str] = []
    billing, guest = toolbox(ran, caller=("billing.refund",)), toolbox(ran, caller=None)
    toolset = ToolsiftToolset()  # the caller comes from each run's deps

    def context(deps: ts.Toolbox) -> RunContext[Any]:
        return RunContext(deps=deps, model=TestModel(), usage=RunUsage())

    tools = asyncio.run(toolset.get_tools(context(billing)))
    assert "issue_refund" in tools and "issue_refund" not in asyncio.run(toolset.get_tools(context(guest)))
    with pytest.raises(ModelRetry, match="unknown tool 'issue_refund'"):  # a listing kept from another caller
        asyncio.run(toolset.call_tool("issue_refund", {}, context(guest), tools["issue_refund"]))
    assert ran == []
    assert asyncio.run(toolset.call_tool("issue_refund", {}, context(billing), tools["issue_refund"])) == (
        "issue_refund done"
    )


def test_meta_tools_mode_uses_the_toolboxs_tool_search_and_loads_what_it_found() -> None:
    ran: list[str] = []
    script = Script(
        [ToolCallPart("tool_search", {"query": "shipping status"})],
        [ToolCallPart("order_status", {}), ToolCallPart("call_tool", {"name": "issue_refund", "arguments": {}})],
        [TextPart("It has shipped.")],
    )
    agent = Agent(FunctionModel(script), deps_type=ts.Toolbox, toolsets=[ToolsiftToolset(meta_tools=True)])
    box = toolbox(ran)
    result = agent.run_sync("where is my order?", deps=box)
    assert script.tools[0] == ["search_help", "tool_search", "call_tool"]  # nothing deferred: no search_tools
    assert script.tools[1] == ["search_help", "tool_search", "call_tool", "order_status"]
    assert "unknown tool 'issue_refund'" in script.said(2) and ran == ["order_status"]
    # what was found is read from the conversation, so it stays loaded in the next run of it
    later = Script([TextPart("Anything else?")])
    agent.run_sync("thanks", deps=box, model=FunctionModel(later), message_history=result.all_messages())
    assert later.tools[0][-1] == "order_status"


@pytest.mark.parametrize("bad", [["order_status"], 7, None, {"n": 1}])
def test_a_history_whose_tool_search_result_was_tampered_with_still_runs(bad: Any) -> None:
    """The message history is the client's: a search result naming a tool by a non-string is
    skipped, not a crash of the step (and loads nothing)."""
    from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart

    found = json.dumps([{"name": bad}, {"name": "order_status"}])
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("where is my order?")]),
        ModelResponse(parts=[ToolCallPart("tool_search", {"query": "order"}, tool_call_id="s")]),
        ModelRequest(parts=[ToolReturnPart("tool_search", found, tool_call_id="s")]),
        ModelResponse(parts=[TextPart("Found it.")]),
    ]
    later = Script([TextPart("Anything else?")])
    agent = Agent(FunctionModel(later), deps_type=ts.Toolbox, toolsets=[ToolsiftToolset(meta_tools=True)])
    agent.run_sync("thanks", deps=toolbox([]), message_history=history)
    assert later.tools[0] == ["search_help", "tool_search", "call_tool", "order_status"]


def test_prepare_tools_loads_what_the_conversation_needs_and_keeps_the_agents_own_tools() -> None:
    ran: list[str] = []
    box = toolbox(ran, caller=("orders.read", "billing.refund"), tiers=False)

    def local_clock() -> str:
        """The time."""
        return "noon"

    script = Script([ToolCallPart("issue_refund", {})], [TextPart("Refunded.")])
    agent = Agent(
        FunctionModel(script),
        deps_type=ts.Toolbox,
        tools=[Tool(local_clock)],
        toolsets=[ToolsiftToolset()],
        capabilities=[PrepareTools(prepare_tools(budget_tokens=4000))],
    )
    ask = FunctionModel(lambda messages, info: ModelResponse(parts=[TextPart("Shall I refund the duplicate payment?")]))
    first = agent.run_sync("I was charged twice", deps=box, model=ask)
    result = agent.run_sync("yes, do it", deps=box, message_history=first.all_messages())
    assert result.output == "Refunded." and ran == ["issue_refund"]
    assert script.tools[0] == ["local_clock", "search_help", "issue_refund", "refund_policy"]
    assert "order_status" not in script.tools[1]  # not needed by this conversation


def test_prepare_tools_loads_a_selected_deferred_tool_and_leaves_the_rest_discoverable() -> None:
    box = toolbox([])
    script = Script([TextPart("ok")])
    agent = Agent(
        FunctionModel(script),
        toolsets=[ToolsiftToolset(box)],
        capabilities=[PrepareTools(prepare_tools(box, budget_tokens=4000)), tool_search()],
    )
    agent.run_sync("what is the shipping status of my order?")
    assert script.tools[0] == ["search_help", "order_status", "search_tools"]  # refund_policy still deferred


@dataclass
class Deps:
    toolbox: ts.Toolbox
    user_id: str


def test_the_caller_can_ride_in_the_runs_own_deps_and_a_run_without_one_fails_clearly() -> None:
    ran: list[str] = []
    script = Script([ToolCallPart("search_help", {"q": "x"})], [TextPart("done")])
    agent = Agent(FunctionModel(script), deps_type=Deps, toolsets=[ToolsiftToolset()])
    agent.run_sync("help me", deps=Deps(toolbox(ran), "u1"))
    assert ran == ["search_help"]
    with pytest.raises(InvalidParameterError, match="Toolbox"):
        Agent(FunctionModel(Script([TextPart("x")])), toolsets=[ToolsiftToolset()]).run_sync("help", deps="nobody")
    with pytest.raises(InvalidParameterError, match="Toolbox"):
        ToolsiftToolset("not a toolbox")  # type: ignore[arg-type]


def test_a_toolset_shared_by_runs_serves_each_run_its_own_toolboxs_definitions() -> None:
    """A run switched out right after the toolset noted its toolbox, another run going on in
    between (a thread switch, forced here with a trace function), still gets its own tools."""
    shared = ToolsiftToolset()
    order = ts.Toolbox(ts.Catalog([ts.Tool("lookup", "Look up an order")]))
    invoice = ts.Toolbox(ts.Catalog([ts.Tool("lookup", "Look up an invoice")]))

    def run(box: ts.Toolbox) -> dict[str, Any]:
        step = shared.get_tools(RunContext(deps=box, model=TestModel(), usage=RunUsage()))
        with pytest.raises(StopIteration) as done:
            step.send(None)  # get_tools awaits nothing: one step runs it to the end
        return done.value.value  # type: ignore[no-any-return]

    lines, first = inspect.getsourcelines(ToolsiftToolset.get_tools)
    switch = first + next(i for i, line in enumerate(lines) if "made =" in line)
    meanwhile: list[dict[str, Any]] = []

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        if frame.f_code is not ToolsiftToolset.get_tools.__code__:
            return None
        if event == "line" and frame.f_lineno == switch and frame.f_locals["box"] is order and not meanwhile:
            meanwhile.append(run(invoice))
        return tracer

    before = sys.gettrace()
    sys.settrace(tracer)
    try:
        tools = run(order)
    finally:
        sys.settrace(before)
    assert meanwhile, "the other run did not happen in between"
    assert tools["lookup"].tool_def.description == "Look up an order"
    assert meanwhile[0]["lookup"].tool_def.description == "Look up an invoice"
    assert run(order)["lookup"].tool_def.description == "Look up an order"


def test_the_strategy_ranks_only_the_callers_tools_within_the_corpus() -> None:
    box = toolbox([], caller=("orders.read", "billing.refund"))
    strategy = search_strategy(box, depth=1)
    ctx = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    tools = asyncio.run(ToolsiftToolset(box).get_tools(ctx))
    corpus = [tools["refund_policy"].tool_def]  # better-ranked tools outside the corpus are skipped
    assert strategy(ctx, ["refund the order payment"], corpus) == ["refund_policy"]
    assert "issue_refund" not in search_strategy(toolbox([]))(
        ctx, ["refund payment"], [t.tool_def for t in tools.values()]
    )


def test_messages_become_a_query_of_the_conversation() -> None:
    result = Agent(TestModel(custom_output_text="Shall I refund the duplicate payment?")).run_sync("charged twice")
    items = to_messages(result.all_messages())
    assert items == [
        {"role": "user", "content": "charged twice"},
        {"role": "assistant", "content": "Shall I refund the duplicate payment?"},
    ]
    later = [*items, {"role": "user", "content": "yes"}]
    assert ts.Query.from_messages(later).parts[-1] == ("Shall I refund the duplicate payment?", 0.5)


def test_a_botocore_schema_reaches_the_model_unchanged() -> None:
    pytest.importorskip("botocore")
    from toolsift.catalogs import aws_catalog

    aws = aws_catalog()
    create = aws[aws.position("lambda__CreateFunction")]
    received: list[dict[str, Any]] = []
    box = ts.Toolbox(
        ts.Catalog([create]), caller={"aws:lambda"}, handlers={create.name: lambda a: received.append(a) or "ok"}
    )
    arguments = {"FunctionName": "f", "Role": "r", "Code": {}, "Environment": {"Variables": {"A": "1"}}}
    script = Script([ToolCallPart(create.name, arguments)], [TextPart("created")])
    Agent(FunctionModel(script), toolsets=[ToolsiftToolset(box)]).run_sync("create f")
    assert script.definitions[0][0].parameters_json_schema == create.parameters
    assert received == [arguments]


def test_a_strict_tool_reaches_the_model_strict_and_others_do_not() -> None:
    schema = {
        "type": "object",
        "properties": {"id": {"type": "string"}},
        "required": ["id"],
        "additionalProperties": False,
    }
    catalog = ts.Catalog(
        [ts.Tool("cancel_order", "Cancel an order", schema, strict=True), ts.Tool("order_status", "Status")]
    )
    script = Script([TextPart("ok")])
    Agent(FunctionModel(script), toolsets=[ToolsiftToolset(ts.Toolbox(catalog))]).run_sync("cancel it")
    assert {d.name: d.strict for d in script.definitions[0]} == {"cancel_order": True, "order_status": None}


def test_the_readme_example_runs() -> None:
    before, block = readme_toolbox_prelude(), readme_block("PydanticAI")
    namespace: dict[str, Any] = {}
    exec(compile(before, "README.md", "exec"), namespace)
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["box"].used == {"order_status": 1}
