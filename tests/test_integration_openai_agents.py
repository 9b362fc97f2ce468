"""The OpenAI Agents SDK adapter, run end to end by the SDK's own Runner with its ScriptedModel."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from helpers import readme_block, readme_toolbox_prelude

agents = pytest.importorskip("agents")

from agents import Agent, FunctionTool, RunConfig, RunContextWrapper, Runner  # noqa: E402
from agents.exceptions import ModelBehaviorError, UserError  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

import toolsift as ts  # noqa: E402
from toolsift.errors import (  # noqa: E402
    InvalidParameterError,
    InvalidToolError,
    InvalidToolTypeError,
    SchemaError,
    UnknownToolError,
)
from toolsift.integrations.openai_agents import ToolsiftAgent, function_tool, function_tools, select_tools  # noqa: E402

NO_TRACES = RunConfig(tracing_disabled=True)
CATALOG = ts.Catalog(
    [
        ts.Tool("search_help", "Search the help center articles", core=True),
        ts.Tool("order_status", "Get the shipping status of an order", permissions="orders.read"),
        ts.Tool("issue_refund", "Refund a customer order payment", permissions="billing.refund"),
        ts.Tool("refund_policy", "Explain the refund policy to the customer"),
    ]
)


def toolbox(ran: list[str], caller: Any = ("orders.read",), tiers: bool = True) -> ts.Toolbox:
    """A toolbox whose every handler records its tool's name in ``ran``."""
    handlers = {t.name: (lambda args, n=t.name: ran.append(n) or f"{n} done") for t in CATALOG}
    options = ts.ToolTierOptions(core=["search_help"]) if tiers else None
    return ts.Toolbox(CATALOG, caller=caller, tiers=options, handlers=handlers)


def names(call: Any) -> list[str]:
    return [t.name for t in call.tools]


def outputs(result: Any) -> dict[str, str]:
    """``{call_id: output}`` of the run's function_call_output items."""
    items = result.to_input_list()
    return {i["call_id"]: i["output"] for i in items if i.get("type") == "function_call_output"}


def shipping_script() -> ScriptedModel:
    """A model that searches for the order's shipping status, calls `order_status`, answers."""
    return ScriptedModel(
        [
            [function_call("tool_search", {"query": "shipping status of my order"}, call_id="s")],
            [function_call("order_status", {"order": "A1"}, call_id="o")],
            [assistant_message("It has shipped.")],
        ]
    )


def test_a_restricted_catalog_tool_named_like_a_meta_tool_leaves_the_agent_working() -> None:
    """The toolbox takes a catalog tool named ``call_tool`` that the caller may not use (it is
    never named to it); the adapter took the toolbox's own ``call_tool`` for it and refused it,
    so every run of such a caller failed with UnknownToolError."""
    ran: list[str] = []
    legacy = ts.Tool("call_tool", "Legacy admin dispatcher of every payment", permissions="admin")
    catalog = ts.Catalog([*CATALOG, legacy])
    handlers = {t.name: (lambda args, n=t.name: ran.append(n) or f"{n} done") for t in catalog}
    box = ts.Toolbox(
        catalog, caller=("orders.read",), tiers=ts.ToolTierOptions(core=["search_help"]), handlers=handlers
    )
    model = ScriptedModel(
        [
            [function_call("call_tool", {"name": "order_status", "arguments": {"order": "A1"}}, call_id="c")],
            [assistant_message("It has shipped.")],
        ]
    )
    result = Runner.run_sync(ToolsiftAgent(name="support", model=model, toolbox=box), "where?", run_config=NO_TRACES)
    assert result.final_output == "It has shipped." and ran == ["order_status"]
    sent = [(t.name, t.description) for t in model.calls[0].tools]
    assert [n for n, _ in sent] == ["search_help", "tool_search", "call_tool"]
    assert not any("Legacy" in d for _, d in sent)  # the restricted tool's text is never sent
    assert [t.name for t in function_tools(box)] == ["search_help", "tool_search", "call_tool"]
    assert "Legacy" not in function_tool(box, "call_tool").description


def test_tool_search_loads_the_found_tools_into_the_next_turns() -> None:
    ran: list[str] = []
    box = toolbox(ran)
    model = shipping_script()
    agent = ToolsiftAgent(name="support", model=model, toolbox=box)
    result = Runner.run_sync(agent, "where is my order?", run_config=NO_TRACES)
    assert result.final_output == "It has shipped."
    assert names(model.calls[0]) == ["search_help", "tool_search", "call_tool"]  # the tiered tools array
    assert names(model.calls[1]) == ["search_help", "tool_search", "call_tool", "order_status"]  # loaded
    assert names(model.calls[2]) == names(model.calls[1])
    assert [d["name"] for d in json.loads(outputs(result)["s"])] == ["order_status"]
    assert ran == ["order_status"] and box.used == {"order_status": 1}
    assert agent.loaded == ["order_status"]


def test_an_own_tool_that_tool_search_also_finds_is_given_to_the_model_once() -> None:
    """The agent's own `order_status` was loaded again when a search found it: two tools of one
    name, of which the SDK drops one ("Tool name collision detected")."""
    ran: list[str] = []
    box = toolbox(ran)
    model = shipping_script()
    own = function_tool(box, "order_status")
    agent = ToolsiftAgent(name="support", model=model, toolbox=box, tools=[own])
    result = Runner.run_sync(agent, "where is my order?", run_config=NO_TRACES)
    assert result.final_output == "It has shipped." and ran == ["order_status"]
    assert names(model.calls[0]) == ["order_status", "search_help", "tool_search", "call_tool"]
    assert names(model.calls[1]) == names(model.calls[0]) == names(model.calls[2])  # once, the own one


def test_load_found_false_keeps_the_tools_array_fixed_and_call_tool_still_runs_found_tools() -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            [function_call("tool_search", {"query": "order status"}, call_id="s")],
            [function_call("call_tool", {"name": "order_status", "arguments": {}}, call_id="c")],
            [assistant_message("done")],
        ]
    )
    agent = ToolsiftAgent(name="support", model=model, toolbox=toolbox(ran), load_found=False)
    result = Runner.run_sync(agent, "where is my order?", run_config=NO_TRACES)
    assert {tuple(names(c)) for c in model.calls} == {("search_help", "tool_search", "call_tool")}
    assert outputs(result)["c"] == "order_status done" and ran == ["order_status"]


def test_a_forbidden_tool_is_refused_on_every_path_and_never_shown() -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            [function_call("tool_search", {"query": "select:issue_refund"}, call_id="s")],
            [function_call("call_tool", {"name": "issue_refund", "arguments": {}}, call_id="c")],
            [function_call("issue_refund", {}, call_id="d")],
            [assistant_message("I cannot refund that.")],
        ]
    )
    agent = ToolsiftAgent(name="support", model=model, toolbox=toolbox(ran))
    run_config = RunConfig(tracing_disabled=True, tool_not_found_behavior="return_error_to_model")
    result = Runner.run_sync(agent, "refund my order", run_config=run_config)
    out = outputs(result)
    assert out["s"] == "[]"  # not found, not loaded
    assert "unknown tool 'issue_refund'" in out["c"]  # exactly what a missing tool gets
    assert "not found" in out["d"]  # never converted, so the SDK has no such tool
    assert ran == [] and agent.loaded == []
    for call in model.calls:  # not in any tools array, description or schema sent to the model
        sent = json.dumps([[t.name, t.description, t.params_json_schema] for t in call.tools])
        assert "issue_refund" not in sent


def test_a_converted_tool_rechecks_the_permission_when_the_model_calls_it() -> None:
    ran: list[str] = []
    box = toolbox(ran)
    with pytest.raises(UnknownToolError) as forbidden:
        function_tool(box, "issue_refund")
    with pytest.raises(UnknownToolError) as missing:
        function_tool(box, "no_such_tool")
    assert str(forbidden.value) == str(missing.value).replace("no_such_tool", "issue_refund")
    # a catalog tool handed over as a definition (another caller's selection) is refused too:
    # its description and schema never reach this caller's model
    with pytest.raises(UnknownToolError, match="issue_refund"):
        function_tool(box, {"name": "issue_refund", "description": "Refund", "parameters": {"type": "object"}})
    # a definition of a tool outside the catalog still runs through the toolbox, which refuses it
    smuggled = function_tool(box, {"name": "wire_money", "description": "Wire", "parameters": {"type": "object"}})
    model = ScriptedModel([[function_call("wire_money", {}, call_id="d")], [assistant_message("no")]])
    result = Runner.run_sync(Agent(name="plain", model=model, tools=[smuggled]), "refund", run_config=NO_TRACES)
    assert "unknown tool 'wire_money'" in outputs(result)["d"] and ran == []


def test_the_model_reads_why_a_call_was_refused_but_not_a_handlers_exception() -> None:
    def leaky(args: dict[str, Any]) -> str:
        raise RuntimeError("db password hunter2 rejected")

    box = ts.Toolbox(CATALOG, caller=("orders.read",), handlers={"order_status": leaky})
    model = ScriptedModel(
        [
            [function_call("order_status", {}, call_id="h"), function_call("wire_money", {}, call_id="r")],
            [assistant_message("sorry")],
        ]
    )
    tools = [function_tool(box, "order_status"), function_tool(box, {"name": "wire_money", "parameters": {}})]
    out = outputs(Runner.run_sync(Agent(name="plain", model=model, tools=tools), "?", run_config=NO_TRACES))
    assert "hunter2" not in out["h"] and "error occurred" in out["h"]  # the SDK's fixed text
    assert "unknown tool 'wire_money'" in out["r"]  # toolsift's: the model need not retry


def test_a_refusal_raises_when_the_failure_function_is_none() -> None:
    ran: list[str] = []
    strict = function_tool(
        toolbox(ran), {"name": "wire_money", "description": "", "parameters": {}}, failure_error_function=None
    )
    model = ScriptedModel([[function_call("wire_money", {}, call_id="d")]])
    with pytest.raises(UserError) as raised:  # the SDK wraps what a tool raises
        Runner.run_sync(Agent(name="plain", model=model, tools=[strict]), "refund", run_config=NO_TRACES)
    assert isinstance(raised.value.__cause__, UnknownToolError) and ran == []


def test_a_tool_the_sdk_does_not_know_fails_the_run_by_default_without_running_anything() -> None:
    ran: list[str] = []
    model = ScriptedModel([[function_call("issue_refund", {}, call_id="d")]])
    with pytest.raises(ModelBehaviorError):
        Runner.run_sync(ToolsiftAgent(name="s", model=model, toolbox=toolbox(ran)), "refund", run_config=NO_TRACES)
    assert ran == []


def test_bad_arguments_reach_the_model_as_an_error_naming_the_tool() -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [
            [function_call("search_help", "not json", call_id="a"), function_call("search_help", "[1]", call_id="b")],
            [assistant_message("sorry")],
        ]
    )
    result = Runner.run_sync(ToolsiftAgent(name="s", model=model, toolbox=toolbox(ran)), "help", run_config=NO_TRACES)
    out = outputs(result)
    assert "'search_help'" in out["a"] and "not JSON" in out["a"]
    assert "'search_help'" in out["b"] and "JSON object" in out["b"]
    assert ran == []


def test_each_clone_carries_its_own_caller_and_starts_with_nothing_loaded() -> None:
    ran: list[str] = []
    model = ScriptedModel(
        [[function_call("tool_search", {"query": "refund the payment"}, call_id="s")], [assistant_message("ok")]]
    )
    support = ToolsiftAgent(name="support", model=model, toolbox=toolbox(ran))
    billing = support.clone(toolbox=toolbox(ran, caller=("billing.refund",)))
    assert isinstance(billing, ToolsiftAgent) and billing.loaded == []
    Runner.run_sync(billing, "refund the duplicate payment", run_config=NO_TRACES)
    assert "issue_refund" in billing.loaded and support.loaded == []
    assert "issue_refund" in names(model.calls[1])


def test_a_clone_for_another_caller_remakes_its_own_tools_for_that_caller() -> None:
    """A clone kept the agent's own function tools, made for the first caller's toolbox: the
    second caller was shown, and ran as the first, a tool it may not use."""
    ran: list[tuple[str, str]] = []

    def box(caller: tuple[str, ...]) -> ts.Toolbox:
        handlers = {t.name: (lambda args, n=t.name: ran.append((n, caller[0])) or "done") for t in CATALOG}
        return ts.Toolbox(CATALOG, caller=caller, tiers=ts.ToolTierOptions(core=["search_help"]), handlers=handlers)

    billing = box(("billing.refund",))
    template = ToolsiftAgent(
        name="ops", toolbox=billing, tools=function_tools(billing, ["issue_refund", "refund_policy"])
    )
    model = ScriptedModel(
        [
            [function_call("refund_policy", {}, call_id="p")],
            [function_call("issue_refund", {}, call_id="r")],
            [assistant_message("ok")],
        ]
    )
    reader = template.clone(toolbox=box(("orders.read",)), model=model)
    with pytest.raises(ModelBehaviorError, match="issue_refund"):  # never shown: the model cannot call it
        Runner.run_sync(reader, "refund me", run_config=NO_TRACES)
    assert names(model.calls[0]) == ["refund_policy", "search_help", "tool_search", "call_tool"]
    assert ran == [("refund_policy", "orders.read")]  # the own tool it may use runs as the clone's caller


def test_a_clone_does_not_keep_the_first_callers_meta_tool_descriptions() -> None:
    """Remade from the first caller's definitions, the clone's tool_search described the tools of
    a caller allowed more (their names), to a caller who may not use them."""
    billing = toolbox([], caller=("billing.refund",))
    template = ToolsiftAgent(name="ops", toolbox=billing, tools=function_tools(billing, billing.tools()))
    reader = template.clone(toolbox=toolbox([], caller=("orders.read",)))
    tools = asyncio.run(reader.get_all_tools(RunContextWrapper(context=None)))
    assert "issue_refund" not in json.dumps([[t.name, t.description] for t in tools])
    assert [t.name for t in tools].count("tool_search") == 1


def test_an_agent_given_another_toolbox_never_runs_a_tool_through_the_first() -> None:
    """The agent's converted tools belong to the toolbox they were made for: after
    ``agent.toolbox = other`` (another caller), tool_search and call_tool run as that caller."""
    ran: list[str] = []
    model = ScriptedModel(
        [
            [assistant_message("hello")],
            [function_call("tool_search", {"query": "refund the payment"}, call_id="s")],
            [function_call("call_tool", {"name": "issue_refund", "arguments": {}}, call_id="c")],
            [assistant_message("done")],
        ]
    )
    agent = ToolsiftAgent(name="support", model=model, toolbox=toolbox(ran, caller=("billing.refund",)))
    Runner.run_sync(agent, "hi", run_config=NO_TRACES)  # the billing caller's turn
    agent.toolbox = toolbox(ran, caller=("orders.read",))  # now a caller without billing.refund
    result = Runner.run_sync(agent, "refund the duplicate payment", run_config=NO_TRACES)
    found = outputs(result)
    assert "issue_refund" not in found["s"] and "issue_refund" not in agent.loaded
    assert ran == [] and "issue_refund" in found["c"] and "done" not in found["c"]  # refused, named


def test_the_tools_array_follows_the_plan_after_a_reset() -> None:
    ran: list[str] = []
    box = toolbox(ran)
    model = ScriptedModel([[assistant_message("one")], [assistant_message("two")]])
    agent = ToolsiftAgent(name="support", model=model, toolbox=box)
    Runner.run_sync(agent, "hi", run_config=NO_TRACES)
    box.tiers = ts.ToolTierOptions(core=["search_help", "refund_policy"])
    box.reset()
    Runner.run_sync(agent, "hi", run_config=NO_TRACES)
    first, second = (next(t for t in call.tools if t.name == "tool_search") for call in model.calls)
    assert names(model.calls[1]) == ["refund_policy", "search_help", "tool_search", "call_tool"]
    assert "refund_policy" in first.description and "refund_policy" not in second.description
    assert second.description == box.tools()[-2]["function"]["description"]


def test_a_toolsift_agent_needs_a_toolbox_and_bad_definitions_name_the_tool_and_field() -> None:
    with pytest.raises(InvalidParameterError, match="toolbox"):
        ToolsiftAgent(name="support")
    box = toolbox([])
    with pytest.raises(InvalidToolTypeError) as bad:
        function_tool(box, {"type": "function", "function": {"name": "lookup", "description": 3}})
    assert (bad.value.tool, bad.value.field) == ("lookup", "description")
    with pytest.raises(SchemaError) as bad_schema:
        function_tool(box, {"name": "lookup", "parameters": ["not", "a", "schema"]})
    assert (bad_schema.value.tool, bad_schema.value.field) == ("lookup", "parameters")
    with pytest.raises(InvalidToolError):
        function_tool(box, {"description": "no name"})
    with pytest.raises(InvalidParameterError):
        function_tool(box, 42)  # type: ignore[arg-type]


def test_async_handlers_and_hooks_run_and_hooks_see_the_real_tool() -> None:
    seen: list[tuple[str, str | None]] = []

    async def status(args: Any) -> str:
        return f"order {args['order']} shipped"

    async def before(event: ts.ToolEvent) -> None:
        seen.append((event.name, event.via))

    box = ts.Toolbox(
        CATALOG,
        caller={"orders.read"},
        tiers=ts.ToolTierOptions(core=["search_help"]),
        handlers={"order_status": status},
        hooks=ts.Hooks(before_tool=before),
    )
    model = ScriptedModel(
        [
            [function_call("call_tool", {"name": "order_status", "arguments": {"order": "A1"}}, call_id="c")],
            [assistant_message("shipped")],
        ]
    )
    result = Runner.run_sync(ToolsiftAgent(name="s", model=model, toolbox=box), "my order?", run_config=NO_TRACES)
    assert outputs(result)["c"] == "order A1 shipped"
    assert seen == [("order_status", "call_tool")]


def test_selection_mode_picks_this_turns_tools_from_responses_items() -> None:
    ran: list[str] = []
    box = toolbox(ran, caller=("orders.read", "billing.refund"), tiers=False)
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "I was charged twice"}]},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Shall I refund the duplicate payment?"}],
        },
        {"role": "user", "content": "yes, do it"},
    ]
    tools = select_tools(box, history, budget_tokens=4000)
    assert [t.name for t in tools] == ["search_help", "issue_refund", "refund_policy"]
    assert all(isinstance(t, FunctionTool) and not t.strict_json_schema for t in tools)
    model = ScriptedModel([[function_call("issue_refund", {}, call_id="r")], [assistant_message("Refunded.")]])
    agent = Agent(name="support", model=model)
    result = Runner.run_sync(agent.clone(tools=tools), history, run_config=NO_TRACES)  # type: ignore[arg-type]
    assert result.final_output == "Refunded." and ran == ["issue_refund"]
    # the next user turn: the conversation so far, as the SDK returns it; used tools stay in
    later = [*result.to_input_list(), {"role": "user", "content": "where is my help article?"}]
    assert "issue_refund" in [t.name for t in select_tools(box, later, budget_tokens=4000)]


def test_function_tools_defaults_to_the_toolbox_tools_array() -> None:
    assert [t.name for t in function_tools(toolbox([]))] == ["search_help", "tool_search", "call_tool"]
    untiered = function_tools(toolbox([], tiers=False))  # every tool the caller may use, sorted by name
    assert [t.name for t in untiered] == ["order_status", "refund_policy", "search_help"]


STRICT_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "note": {"type": ["string", "null"]}},
    "required": ["order_id", "note"],
    "additionalProperties": False,
}


def test_a_strict_tool_gets_the_sdks_strict_mode_with_its_schema_unchanged() -> None:
    strict = ts.Tool("cancel_order", "Cancel an order", STRICT_SCHEMA, strict=True)
    received: list[dict[str, Any]] = []
    box = ts.Toolbox(ts.Catalog([strict]), handlers={"cancel_order": lambda a: received.append(a) or "ok"})
    [tool] = function_tools(box)
    assert tool.strict_json_schema and tool.params_json_schema == STRICT_SCHEMA
    arguments = {"order_id": "A1", "note": None}
    model = ScriptedModel([[function_call(tool.name, arguments, call_id="c")], [assistant_message("ok")]])
    result = Runner.run_sync(ToolsiftAgent(name="ops", model=model, toolbox=box), "cancel A1", run_config=NO_TRACES)
    assert outputs(result)["c"] == "ok" and received == [arguments]
    [entry] = ts.to_openai([strict])
    assert entry["function"]["strict"] is True and function_tool(box, entry).strict_json_schema  # the entry's flag
    for flag in (False, None):  # only a declared strict tool: others keep their optional arguments
        loose = ts.Tool("cancel_order", "Cancel an order", STRICT_SCHEMA, strict=flag)
        assert not function_tool(ts.Toolbox(ts.Catalog([loose])), "cancel_order").strict_json_schema


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"order_id": {"type": "string"}}, "additionalProperties": True},
        # an optional argument: the SDK would make it required
        {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]},
        # a $ref to nothing: the SDK raised a raw KeyError
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/address"}}, "required": ["a"]},
    ],
)
def test_a_strict_tool_whose_schema_is_not_strict_is_refused_naming_the_tool_and_field(schema: dict[str, Any]) -> None:
    box = ts.Toolbox(ts.Catalog([ts.Tool("cancel_order", "Cancel an order", schema, strict=True)]))
    with pytest.raises(SchemaError, match="strict") as e:
        function_tool(box, "cancel_order")
    assert (e.value.tool, e.value.field) == ("cancel_order", "strict")


def test_a_strict_schema_in_another_order_is_strict_and_an_agent_survives_one_that_is_not(
    caplog: pytest.LogCaptureFixture,
) -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "units": {"type": ["string", "null"], "default": None}},
        "required": ["units", "city"],
        "additionalProperties": False,
    }
    loose = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"]}
    catalog = ts.Catalog(
        [
            ts.Tool("get_weather", "Weather for a city", schema, strict=True, core=True),
            ts.Tool("send_mail", "Send a mail", loose, strict=True, core=True),
        ]
    )
    box = ts.Toolbox(catalog, tiers=ts.ToolTierOptions(core=["get_weather", "send_mail"]))
    assert function_tool(box, "get_weather").strict_json_schema  # required in another order, a null default
    agent = ToolsiftAgent(name="ops", toolbox=box)
    with caplog.at_level("WARNING", logger="toolsift.integrations.openai_agents"):
        tools = asyncio.run(agent.get_all_tools(RunContextWrapper(context=None)))
    made = {t.name: t for t in tools if isinstance(t, FunctionTool)}
    assert list(made) == ["get_weather", "send_mail", "tool_search", "call_tool"]
    assert made["get_weather"].strict_json_schema and not made["send_mail"].strict_json_schema
    assert "tool 'send_mail', field 'strict'" in caplog.text


def test_an_anthropic_or_mcp_definition_is_refused_rather_than_sent_without_its_schema() -> None:
    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}
    box = toolbox([])
    for entry in ({"name": "order_status", "input_schema": schema}, {"name": "order_status", "inputSchema": schema}):
        with pytest.raises(InvalidToolError) as e:
            function_tool(box, entry)
        assert (e.value.tool, e.value.field) == ("order_status", "parameters")


@pytest.fixture(scope="module")
def lambda_catalog() -> ts.Catalog:
    pytest.importorskip("botocore")
    from toolsift.catalogs import aws_catalog

    aws = aws_catalog()
    return ts.Catalog([aws[aws.position("lambda__CreateFunction")], aws[aws.position("s3__ListObjectsV2")]])


def test_a_botocore_schema_reaches_the_model_unchanged_and_optional_arguments_stay_optional(
    lambda_catalog: ts.Catalog,
) -> None:
    create = lambda_catalog[0]
    environment = create.parameters["properties"]["Environment"]["properties"]["Variables"]
    environment_value = {"Variables": {"A": "1"}}
    assert environment["additionalProperties"] == {"type": "string"}  # a map: strict mode cannot say it
    received: list[dict[str, Any]] = []
    box = ts.Toolbox(
        lambda_catalog, caller={"aws:lambda"}, handlers={"lambda__CreateFunction": lambda a: received.append(a) or "ok"}
    )
    [tool] = function_tools(box)
    assert tool.name == "lambda__CreateFunction" and not tool.strict_json_schema
    assert tool.params_json_schema == create.parameters
    arguments = {"FunctionName": "f", "Role": "arn:aws:iam::1:role/r", "Code": {}, "Environment": environment_value}
    model = ScriptedModel([[function_call(tool.name, arguments, call_id="l")], [assistant_message("ok")]])
    result = Runner.run_sync(ToolsiftAgent(name="ops", model=model, toolbox=box), "create f", run_config=NO_TRACES)
    assert outputs(result)["l"] == "ok" and received == [arguments]  # optional ones omitted, the map passed
    assert create.parameters["properties"]["Environment"]["properties"]["Variables"] == environment  # not mutated


def test_the_readme_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # nothing to export traces with
    agents.set_tracing_disabled(True)
    before, block = readme_toolbox_prelude(), readme_block("OpenAI Agents SDK")
    namespace: dict[str, Any] = {}
    exec(compile(before, "README.md", "exec"), namespace)
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["agent"].loaded == ["order_status"]


def test_hosted_search_defers_every_non_core_tool_and_calls_still_recheck_permissions() -> None:
    from agents import ToolSearchTool
    from agents.models.openai_responses import Converter

    from toolsift.integrations.openai_agents import hosted_search_tools

    ran: list[str] = []
    box = toolbox(ran)
    tools = hosted_search_tools(box)
    assert [t.name for t in tools] == ["search_help", "order_status", "refund_policy", "tool_search"]
    assert isinstance(tools[-1], ToolSearchTool)
    assert [getattr(t, "defer_loading", None) for t in tools[:3]] == [False, True, True]
    converted = Converter.convert_tools(tools, [])  # what the SDK sends to the Responses API
    sent = {p.get("name", p["type"]): p for p in converted.tools}
    assert sent["tool_search"]["type"] == "tool_search"
    assert sent["order_status"].get("defer_loading") is True and "defer_loading" not in sent["search_help"]
    assert "issue_refund" not in sent  # billing.refund is not the caller's: never sent, not even deferred
    model = ScriptedModel(
        [
            # found by the hosted search: the Responses API calls a deferred tool in its own namespace
            [function_call("order_status", {"order": "A1"}, call_id="o", namespace="order_status")],
            [assistant_message("It has shipped.")],
        ]
    )
    agent = Agent(name="support", model=model, tools=tools)
    result = Runner.run_sync(agent, "where is my order?", run_config=NO_TRACES)
    assert result.final_output == "It has shipped." and ran == ["order_status"]
    assert box.used == {"order_status": 1}


def test_the_adapters_check_the_permissions_the_toolbox_read_once() -> None:
    from toolsift.integrations.openai_agents import hosted_search_tools

    catalog = ts.Catalog(
        [ts.Tool("weather", "Weather"), ts.Tool("refund", "Refund a payment", permissions=["billing"])]
    )
    # a one-shot iterable is read once, by the toolbox; the adapters use what it read
    box = ts.Toolbox(catalog, tiers=ts.ToolTierOptions(core=["refund"]), caller=(p for p in ["billing"]))
    assert [t.name for t in hosted_search_tools(box)] == ["refund", "weather", "tool_search"]
    assert function_tool(box, "refund").name == "refund"
    # a set changed after the toolbox was made changes nothing: listings and calls agree
    perms = {"billing"}
    box = ts.Toolbox(catalog, tiers=ts.ToolTierOptions(), caller=perms, handlers={"refund": lambda a: "refunded"})
    perms.discard("billing")
    assert box.perms == ("billing",) and function_tool(box, "refund").name == "refund"
