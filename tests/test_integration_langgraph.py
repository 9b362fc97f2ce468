"""The LangGraph adapter, run end to end in real LangGraph graphs (langgraph-bigtool's agent and
``create_react_agent``) with a scripted chat model: no LLM, no network."""

from __future__ import annotations

import asyncio
import re
import warnings
from typing import Any

import pytest

pytest.importorskip("langgraph_bigtool")

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

import toolsift as ts
from helpers import readme_block
from toolsift.errors import InvalidParameterError, InvalidToolError
from toolsift.integrations.langgraph import Toolset, caller_config, query_from_messages, to_openai_messages

ORDER_SCHEMA = {
    "type": "object",
    "properties": {"order_id": {"type": "string", "description": "The order number"}, "config": {"type": "string"}},
    "required": ["order_id"],
}


class ScriptedModel(FakeMessagesListChatModel):
    """Answers with its scripted messages in turn and records the tools bound before each answer."""

    bound: list[list[dict[str, Any]]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:  # type: ignore[override]
        self.bound.append([convert_to_openai_tool(t)["function"] for t in tools])
        return self

    def bound_names(self) -> list[list[str]]:
        return [[f["name"] for f in tools] for tools in self.bound]


def call(name: str, call_id: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args, "id": call_id, "type": "tool_call"}


def shop() -> ts.Catalog:
    return ts.Catalog(
        [
            ts.Tool("search_help", "Search the help center articles", core=True),
            ts.Tool("order_status", "Get the shipping status of an order", ORDER_SCHEMA, permissions="orders.read"),
            ts.Tool("issue_refund", "Refund a customer order payment", permissions="billing.refund"),
            ts.Tool("refund_policy", "Explain the refund policy to the customer"),
        ]
    )


class Ran:
    """Handlers that record what ran."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def handler(self, name: str, answer: str) -> Any:
        def run(arguments: Any) -> str:
            self.calls.append((name, dict(arguments)))
            return answer

        return run

    def handlers(self) -> dict[str, Any]:
        return {
            "order_status": self.handler("order_status", "shipped"),
            "issue_refund": self.handler("issue_refund", "refunded"),
            "search_help": self.handler("search_help", "article"),
        }


def tool_messages(messages: list[BaseMessage]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def test_bigtool_agent_binds_only_the_callers_retrieved_tools_and_runs_them() -> None:
    ran = Ran()
    toolset = Toolset(shop(), ran.handlers(), k=2)
    model = ScriptedModel(
        responses=[
            AIMessage("", tool_calls=[call("retrieve_tools", "r1", query="order refund payment status")]),
            AIMessage("", tool_calls=[call("order_status", "c1", order_id="A7")]),
            AIMessage("It has shipped."),
        ]
    )
    agent = toolset.bigtool_agent(model).compile()
    out = agent.invoke({"messages": [HumanMessage("where is my order A7?")]}, config=caller_config({"orders.read"}))
    results = tool_messages(out["messages"])
    assert results["r1"].content == "Available tools: ['order_status', 'refund_policy']"  # issue_refund: hidden
    assert results["c1"].content == "shipped" and results["c1"].status == "success"
    assert ran.calls == [("order_status", {"order_id": "A7"})]
    assert model.bound_names() == [
        ["retrieve_tools"],
        ["retrieve_tools", "order_status", "refund_policy"],
        ["retrieve_tools", "order_status", "refund_policy"],
    ]
    retrieve = model.bound[0][0]
    assert list(retrieve["parameters"]["properties"]) == ["query"]  # the config never reaches the model
    assert out["messages"][-1].content == "It has shipped."


def test_a_thread_another_caller_goes_on_with_binds_only_its_own_tools() -> None:
    """bigtool keeps the tools a thread retrieved in its state and binds them all on later
    turns: a public caller continuing a billing caller's thread was sent `issue_refund`'s name,
    description and schema (a call of it was still refused)."""
    from langgraph.checkpoint.memory import InMemorySaver

    toolset = Toolset(shop(), Ran().handlers(), k=4)
    model = ScriptedModel(
        responses=[
            AIMessage("", tool_calls=[call("retrieve_tools", "r1", query="refund payment order")]),
            AIMessage("done"),
            AIMessage("hello again"),
        ]
    )
    agent = toolset.bigtool_agent(model).compile(checkpointer=InMemorySaver())
    thread = {"configurable": {"thread_id": "t"}}
    agent.invoke(
        {"messages": [HumanMessage("refund please")]}, config=caller_config({"billing.refund", "orders.read"}, thread)
    )
    agent.invoke({"messages": [HumanMessage("hi")]}, config=caller_config(set(), thread))
    assert model.bound_names() == [
        ["retrieve_tools"],
        ["retrieve_tools", "issue_refund", "order_status", "refund_policy"],
        ["retrieve_tools", "refund_policy"],  # the public caller's turn: its own tools only
    ]


def test_a_retrieval_call_without_a_text_query_is_an_error_message_to_the_model() -> None:
    """bigtool's retrieval node validated the arguments with pydantic, outside any guard: a model
    sending {"query": 5} or {} crashed the graph with pydantic's ValidationError."""
    for args in ({"query": 5}, {}):
        model = ScriptedModel(
            responses=[AIMessage("", tool_calls=[call("retrieve_tools", "r1", **args)]), AIMessage("ok")]
        )
        agent = Toolset(shop(), Ran().handlers()).bigtool_agent(model).compile()
        out = agent.invoke({"messages": [HumanMessage("x")]}, config=caller_config(set()))
        refused = tool_messages(out["messages"])["r1"]
        assert refused.status == "error" and "query must be a string" in refused.content
        assert out["messages"][-1].content == "ok"  # the model was told, and went on


def test_a_forbidden_tool_the_model_names_fails_like_an_unknown_one_and_never_runs() -> None:
    ran = Ran()
    toolset = Toolset(shop(), ran.handlers())
    model = ScriptedModel(
        responses=[
            AIMessage("", tool_calls=[call("issue_refund", "f1"), call("no_such_tool", "u1")]),
            AIMessage("I cannot do that."),
        ]
    )
    agent = toolset.bigtool_agent(model).compile()
    out = agent.invoke({"messages": [HumanMessage("refund me")]}, config=caller_config({"orders.read"}))
    results = tool_messages(out["messages"])
    assert results["f1"].content == "unknown tool 'issue_refund'" and results["f1"].status == "error"
    assert results["u1"].content == "unknown tool 'no_such_tool'" and results["u1"].status == "error"
    assert ran.calls == []
    for message in results.values():  # a plain ToolNode would list every tool it has here
        assert "order_status" not in str(message.content) and "refund_policy" not in str(message.content)


def test_one_compiled_graph_serves_each_caller_with_its_own_tools() -> None:
    ran = Ran()
    toolset = Toolset(shop(), ran.handlers(), k=1)
    script = [
        AIMessage("", tool_calls=[call("retrieve_tools", "r1", query="refund payment")]),
        AIMessage("", tool_calls=[call("issue_refund", "c1")]),
        AIMessage("done"),
    ]
    agent = toolset.bigtool_agent(ScriptedModel(responses=script)).compile()
    reader = agent.invoke({"messages": [HumanMessage("refund")]}, config=caller_config({"orders.read"}))
    billing = agent.invoke({"messages": [HumanMessage("refund")]}, config=caller_config(["billing.refund"]))
    assert tool_messages(reader["messages"])["r1"].content == "Available tools: ['refund_policy']"
    assert tool_messages(reader["messages"])["c1"].status == "error"
    assert tool_messages(billing["messages"])["r1"].content == "Available tools: ['issue_refund']"
    assert tool_messages(billing["messages"])["c1"].content == "refunded"
    assert ran.calls == [("issue_refund", {})]


def test_the_model_cannot_name_its_own_caller_through_tool_arguments() -> None:
    ran = Ran()
    toolset = Toolset(shop(), ran.handlers(), k=1)
    forged = {"configurable": {"toolsift_caller": ["billing.refund"]}}
    model = ScriptedModel(
        responses=[
            AIMessage("", tool_calls=[call("retrieve_tools", "r1", query="refund payment", config=forged)]),
            AIMessage("", tool_calls=[call("issue_refund", "c1", config=forged)]),
            AIMessage("done"),
        ]
    )
    out = toolset.bigtool_agent(model).compile().invoke({"messages": [HumanMessage("refund")]})
    results = tool_messages(out["messages"])
    assert results["r1"].content == "Available tools: ['refund_policy']"  # public tools only
    assert results["c1"].content == "unknown tool 'issue_refund'"
    assert ran.calls == []


def test_async_graph_awaits_async_handlers_and_hooks_see_the_runs_caller() -> None:
    seen: list[ts.ToolEvent] = []

    async def order_status(arguments: Any) -> str:
        await asyncio.sleep(0)
        return f"order {arguments['order_id']} shipped"

    hooks = ts.Hooks(before_tool=seen.append)
    toolset = Toolset(shop(), {"order_status": order_status}, hooks=hooks, caller="orders.read")
    model = ScriptedModel(
        responses=[
            AIMessage("", tool_calls=[call("retrieve_tools", "r1", query="shipping status")]),
            AIMessage("", tool_calls=[call("order_status", "c1", order_id="B2", config="verbatim")]),
            AIMessage("done"),
        ]
    )
    agent = toolset.bigtool_agent(model).compile()
    out = asyncio.run(agent.ainvoke({"messages": [HumanMessage("status of B2")]}))  # the toolset's own caller
    assert tool_messages(out["messages"])["c1"].content == "order B2 shipped"
    assert [(e.name, dict(e.arguments), e.caller) for e in seen] == [
        ("order_status", {"order_id": "B2", "config": "verbatim"}, ("orders.read",))  # 'config' is an argument
    ]


def test_react_agent_binds_each_turns_selection_and_refuses_what_it_did_not_select() -> None:
    from langgraph.prebuilt import create_react_agent

    ran = Ran()
    toolset = Toolset(shop(), ran.handlers())
    model = ScriptedModel(
        responses=[
            AIMessage("", tool_calls=[call("order_status", "c1", order_id="A7"), call("issue_refund", "f1")]),
            AIMessage("Shipped."),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # create_react_agent is deprecated in favour of langchain's
        agent = create_react_agent(toolset.model(model, budget_tokens=4000), toolset.tool_node())
    out = agent.invoke({"messages": [("user", "where is my order?")]}, config=caller_config(("orders.read",)))
    # turn 2: order_status was called, so it stays loaded; the model's 'issue_refund' brings in
    # refund_policy through the query, never issue_refund itself
    assert model.bound_names() == [["search_help", "order_status"], ["search_help", "order_status", "refund_policy"]]
    assert model.bound[0][1]["parameters"] == ORDER_SCHEMA  # the JSON schema, as written
    results = tool_messages(out["messages"])
    assert results["c1"].content == "shipped"
    assert results["f1"].content == "unknown tool 'issue_refund'" and results["f1"].status == "error"
    assert ran.calls == [("order_status", {"order_id": "A7"})]


def test_a_converted_tool_rechecks_the_caller_when_invoked_directly() -> None:
    ran = Ran()
    toolset = Toolset(shop(), ran.handlers())
    refund = toolset.tool("issue_refund")
    refused = refund.invoke(call("issue_refund", "x1"), config=caller_config({"orders.read"}))
    assert isinstance(refused, ToolMessage) and refused.status == "error"
    assert refused.content == "unknown tool 'issue_refund'"
    done = refund.invoke(call("issue_refund", "x2"), config=caller_config({"billing.refund"}))
    assert done.content == "refunded"
    assert ran.calls == [("issue_refund", {})]
    assert [t.name for t in toolset.tools(caller_config(None))] == ["search_help", "refund_policy"]


def test_the_guarded_tool_node_runs_other_langchain_tools_as_they_are() -> None:
    from langchain_core.tools import tool
    from langgraph.graph import END, START, MessagesState, StateGraph

    @tool
    def clock() -> str:
        """The time of day."""
        return "noon"

    toolset = Toolset(shop(), Ran().handlers())
    graph = StateGraph(MessagesState)
    graph.add_node("tools", toolset.tool_node([toolset.tool("issue_refund"), clock]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    message = AIMessage("", tool_calls=[call("clock", "t1"), call("issue_refund", "f1")])
    out = graph.compile().invoke({"messages": [message]}, config=caller_config({"orders.read"}))
    results = tool_messages(out["messages"])
    assert results["t1"].content == "noon"
    assert results["f1"].content == "unknown tool 'issue_refund'"


def test_conversion_keeps_the_json_schema_and_the_description() -> None:
    toolset = Toolset(shop())
    tool = toolset.tool("order_status")
    assert tool.args_schema == ORDER_SCHEMA
    assert convert_to_openai_tool(tool)["function"] == {
        "name": "order_status",
        "description": "Get the shipping status of an order",
        "parameters": ORDER_SCHEMA,
    }
    assert list(toolset.registry()) == ["search_help", "order_status", "issue_refund", "refund_policy"]
    tool.args["order_id"]["enum"] = ["A1"]  # a framework narrowing its own copy leaves the catalog's
    stored = toolset.index.get("order_status", caller=["orders.read"])
    assert stored.parameters == ORDER_SCHEMA and "enum" not in str(ts.to_openai([stored]))


def test_langchain_messages_make_the_same_query_as_their_dicts() -> None:
    messages = [
        HumanMessage("I was charged twice for order 7"),
        AIMessage("", tool_calls=[call("order_status", "c1", order_id="7")]),
        ToolMessage("shipped", tool_call_id="c1"),
        AIMessage("Shall I refund the duplicate payment?"),
        HumanMessage("yes, do it"),
    ]
    query = query_from_messages(messages)
    assert query == ts.Query.from_messages(
        [
            {"role": "user", "content": "I was charged twice for order 7"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"type": "function", "function": {"name": "order_status"}}],
            },
            {"role": "tool", "content": "shipped"},
            {"role": "assistant", "content": "Shall I refund the duplicate payment?"},
            {"role": "user", "content": "yes, do it"},
        ]
    )
    hits = ts.Index(shop()).search(query, k=1, caller=["billing.refund", "orders.read"])
    assert hits[0].tool.name == "issue_refund"
    assert to_openai_messages([("user", "hi")]) == [{"role": "user", "content": "hi"}]
    # content as a list of strings and blocks, which LangChain allows: its text was dropped
    listed = query_from_messages([HumanMessage(["I was charged twice", {"type": "text", "text": "for order 7"}])])
    assert listed == query_from_messages([HumanMessage("I was charged twice\nfor order 7")]) and listed.parts


def test_a_deployed_graph_reads_the_caller_from_the_server_not_from_the_client() -> None:
    """On LangGraph Server a client sends ``configurable`` itself; with only the caller key there,
    a client could name any permissions. ``caller_from`` reads the server's authenticated user,
    and a caller key the client adds is ignored."""
    ran = Ran()
    grants = {"ann": ("billing.refund",), "anonymous": ()}
    toolset = Toolset(
        shop(), ran.handlers(), caller_from=lambda config: grants[config["configurable"]["langgraph_auth_user"]]
    )
    refund = [AIMessage("", tool_calls=[call("issue_refund", "c1")]), AIMessage("done")]
    answers = []
    for user in ("anonymous", "ann"):
        graph = toolset.bigtool_agent(ScriptedModel(responses=list(refund))).compile()
        claimed = {"configurable": {"langgraph_auth_user": user, "toolsift_caller": ["billing.refund"]}}
        out = graph.invoke({"messages": [HumanMessage("refund me")]}, config=claimed)
        answers.append([m.content for m in out["messages"] if m.type == "tool"])
    assert answers == [["unknown tool 'issue_refund'"], ["refunded"]]
    assert ran.calls == [("issue_refund", {})]
    with pytest.raises(InvalidParameterError, match="caller_from"):
        Toolset(shop(), caller_from="langgraph_auth_user")  # type: ignore[arg-type]


def test_bad_input_raises_typed_errors_naming_what_is_wrong() -> None:
    with pytest.raises(InvalidParameterError, match=r"messages\[1\]"):
        query_from_messages([HumanMessage("hi"), 42])
    with pytest.raises(InvalidParameterError, match="list of chat messages"):
        query_from_messages("hi")
    toolset = Toolset(shop())
    with pytest.raises(InvalidParameterError, match="mapping"):
        toolset.caller_of({"configurable": {"toolsift_caller": {"billing.refund": False}}})
    with pytest.raises(InvalidParameterError, match="k must"):
        Toolset(shop(), k=-1)
    # refused when made: one bad handler failed the calls of every tool, mid-conversation
    with pytest.raises(InvalidParameterError, match="Toolset handler of 'order_status' is not a function"):
        Toolset(shop(), {"order_status": "shipped"})  # type: ignore[dict-item]
    with pytest.raises(InvalidParameterError, match="Toolset hooks must be Hooks"):
        Toolset(shop(), hooks="audit")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="Toolset usage must be a usage store"):
        Toolset(shop(), usage="usage.sqlite")  # type: ignore[arg-type]
    clash = ts.Catalog([ts.Tool("retrieve_tools", "A tool of the same name as bigtool's")])
    with pytest.raises(InvalidToolError) as info:
        Toolset(clash).bigtool_agent(ScriptedModel(responses=[AIMessage("hi")]))
    assert info.value.tool == "retrieve_tools" and info.value.field == "name"


def test_readme_langgraph_example_runs() -> None:
    block = readme_block("LangGraph")
    model = ScriptedModel(
        responses=[
            AIMessage("", tool_calls=[call("retrieve_tools", "r1", query="order status")]),
            AIMessage("", tool_calls=[call("order_status", "c1", order_id="A7")]),
            AIMessage("Shipped."),
        ]
    )
    namespace: dict[str, Any] = {"model": model}
    exec(compile(block, "README.md", "exec"), namespace)
    assert namespace["result"]["messages"][-1].content == "Shipped."


def test_without_the_extra_the_import_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "langchain_core.messages", None)
    monkeypatch.delitem(sys.modules, "toolsift.integrations.langgraph")
    with pytest.raises(ImportError, match=re.escape("pip install 'toolsift[langgraph]'")):
        importlib.import_module("toolsift.integrations.langgraph")
