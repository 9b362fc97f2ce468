"""LangGraph and langgraph-bigtool: toolsift tools as LangChain tools, chosen and run for a caller.

A :class:`Toolset` converts each toolsift tool to a LangChain ``StructuredTool`` whose
``args_schema`` is the tool's own JSON schema, answers langgraph-bigtool's ``retrieve_tools``
(sync and async) with :meth:`Index.search <toolsift.Index.search>`, selects the tools of a turn
from LangChain messages, and runs every call through a :class:`~toolsift.Toolbox`, which checks the
caller's permission first: a tool the caller may not use gives the same error ``ToolMessage`` as
a tool that does not exist, even when the model names it.

The caller travels with each run, never in a global: ``config["configurable"]["toolsift_caller"]``
(see :func:`caller_config`), else the toolset's own ``caller``; with neither, public tools only.

Needs ``pip install 'toolsift[langgraph]'`` (langgraph, langchain-core, langgraph-bigtool).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ..errors import InvalidParameterError, InvalidToolError, MissingExtraError, ToolsiftError, UnknownToolError

try:
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage, convert_to_messages
    from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, ensure_config
    from langchain_core.tools import BaseTool, StructuredTool, ToolException
    from langgraph.constants import END
    from langgraph.graph import StateGraph
    from langgraph.prebuilt import ToolNode
    from langgraph.prebuilt.tool_node import ToolCallRequest
    from langgraph.types import Send
except ImportError as e:  # pragma: no cover - without the extra
    raise MissingExtraError(f"{__name__} needs LangGraph: pip install 'toolsift[langgraph]' ({e})") from e

from ..callers import Caller, perms_of
from ..index import Index
from ..query import Query
from ..registry import Catalog, Tool
from ..tiers import Hooks, Toolbox, check_parts
from ..usage import Usage

#: The key of ``config["configurable"]`` that holds the caller's permissions.
CALLER_KEY = "toolsift_caller"
#: The name bigtool gives its retrieval tool (the name of :meth:`Toolset.retrieve_tools`).
RETRIEVE = "retrieve_tools"
Handler = Callable[[Mapping[str, Any]], Any]


def caller_config(caller: Caller, config: RunnableConfig | None = None) -> RunnableConfig:
    """``config`` (or a new one) with the caller's permissions under ``configurable``, for
    ``graph.invoke(inputs, config=caller_config({"orders.read"}))``."""
    out: RunnableConfig = dict(config or {})  # type: ignore[assignment]
    out["configurable"] = {**(out.get("configurable") or {}), CALLER_KEY: perms_of(caller).names}
    return out


def to_openai_messages(messages: Iterable[BaseMessage | Mapping[str, Any] | Any]) -> list[dict[str, Any]]:
    """LangChain messages (``HumanMessage``, ``AIMessage``, ``ToolMessage``... or anything
    ``convert_to_messages`` takes: dicts, ``("user", "text")`` pairs) as the OpenAI-style dicts
    :meth:`Query.from_messages` reads; an AI message's tool calls keep their names, and the
    strings of a content list (LangChain's ``["text", {...}]`` form) become text blocks."""
    roles = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}
    out: list[dict[str, Any]] = []
    for message in _messages(messages):
        content = message.content
        if isinstance(content, list):
            content = [{"type": "text", "text": c} if isinstance(c, str) else c for c in content]
        entry: dict[str, Any] = {"role": roles.get(message.type, message.type), "content": content}
        if isinstance(message, AIMessage) and message.tool_calls:
            entry["tool_calls"] = [{"type": "function", "function": {"name": c["name"]}} for c in message.tool_calls]
        out.append(entry)
    return out


def query_from_messages(messages: Iterable[BaseMessage | Mapping[str, Any] | Any], **options: Any) -> Query:
    """:meth:`Query.from_messages` of a LangChain conversation (``options``: ``plan``,
    ``recent_tools``, ``decay``... as there)."""
    return Query.from_messages(to_openai_messages(messages), **options)


def _messages(messages: Iterable[Any]) -> list[BaseMessage]:
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise InvalidParameterError(f"messages must be a list of chat messages, not {type(messages).__name__}")
    out: list[BaseMessage] = []
    for i, message in enumerate(messages):
        try:
            out.extend(convert_to_messages([message]))
        except (ValueError, TypeError, NotImplementedError, KeyError) as e:
            raise InvalidParameterError(f"messages[{i}] is not a chat message: {e}") from None
    return out


class SiftedTool(StructuredTool):
    """A toolsift tool as a LangChain tool: ``args_schema`` is its JSON schema, and each run goes
    through the :class:`Toolset` that made it (the caller's permission is checked first).

    Unlike ``StructuredTool``'s own run methods, these take no ``config`` or ``run_manager``
    parameter, so a tool argument of either name reaches the tool; the run's config is read
    from LangChain's context instead."""

    def _run(self, /, *args: Any, **kwargs: Any) -> Any:
        assert self.func is not None
        return self.func(kwargs)

    async def _arun(self, /, *args: Any, **kwargs: Any) -> Any:
        assert self.coroutine is not None
        return await self.coroutine(kwargs)


class Toolset:
    """A catalog's tools for LangGraph: conversion, retrieval, selection and guarded execution.

    Args:
        catalog: The tools, as a :class:`~toolsift.Catalog` (indexed here) or a built
            :class:`~toolsift.Index`.
        handlers: ``{name: fn(arguments) -> result}`` (``async def`` too, under ``ainvoke``).
        caller: The permissions used when a run's config names no caller (``None``: public
            tools only).
        caller_from: ``fn(config) -> permissions``: the caller of each run read from its config
            by your code, in place of ``config["configurable"]["toolsift_caller"]``. A deployed
            graph needs it: on LangGraph Server a client sends ``configurable`` itself, so a
            caller key there is the client's own claim; read the server's authenticated user
            instead (``config["configurable"]["langgraph_auth_user"]``).
        hooks: :class:`~toolsift.Hooks` around every real call (``before_tool`` may refuse it).
        usage: A usage store (:class:`~toolsift.UsageStore`, :class:`~toolsift.RedisUsageStore`)
            that records every call, keyed by caller.
        k: How many tool ids :meth:`retrieve_tools` returns.
    """

    def __init__(
        self,
        catalog: Catalog | Index,
        handlers: Mapping[str, Handler] | None = None,
        *,
        caller: Caller = None,
        caller_from: Callable[[RunnableConfig], Caller] | None = None,
        hooks: Hooks | None = None,
        usage: Usage | None = None,
        k: int = 3,
    ) -> None:
        check_parts("Toolset", handlers=handlers, hooks=hooks, usage=usage)  # now, not at the first call
        self.index = catalog if isinstance(catalog, Index) else Index(catalog)
        self.handlers = dict(handlers or {})
        self.caller = perms_of(caller).names
        if caller_from is not None and not callable(caller_from):
            raise InvalidParameterError(
                f"caller_from must be a function of the config, not {type(caller_from).__name__}"
            )
        self.caller_from = caller_from
        self.hooks = hooks or Hooks()
        self.usage = usage
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidParameterError(f"k must be a non-negative integer, not {k!r}")
        self.k = k
        self._converted: dict[str, SiftedTool] = {}

    # -- callers and execution -------------------------------------------------------------------
    def caller_of(self, config: RunnableConfig | None = None) -> tuple[str, ...]:
        """The caller of a run (the run in progress when ``config`` is ``None``): what
        :attr:`caller_from` reads from its config when given; else
        ``config["configurable"]["toolsift_caller"]`` when present, else :attr:`caller`."""
        if self.caller_from is not None:
            return perms_of(self.caller_from(ensure_config(config))).names
        configurable = ensure_config(config).get("configurable") or {}
        if CALLER_KEY in configurable:
            return perms_of(configurable[CALLER_KEY]).names
        return self.caller

    def toolbox(self, config: RunnableConfig | None = None) -> Toolbox:
        """The :class:`~toolsift.Toolbox` that runs calls for the caller of ``config``."""
        return Toolbox(
            self.index, caller=self.caller_of(config), handlers=self.handlers, hooks=self.hooks, usage=self.usage
        )

    def run(self, name: str, arguments: Mapping[str, Any], config: RunnableConfig | None = None) -> Any:
        """Runs a tool for the caller of ``config``; a tool it may not use (or none of that name)
        raises ``ToolException("unknown tool 'name'")``, which LangChain turns into an error
        ``ToolMessage``."""
        try:
            return self.toolbox(config).call(name, arguments)
        except UnknownToolError as e:
            raise ToolException(str(e)) from None

    async def arun(self, name: str, arguments: Mapping[str, Any], config: RunnableConfig | None = None) -> Any:
        """:meth:`run` for async code (``async def`` handlers and hooks are awaited)."""
        try:
            return await self.toolbox(config).acall(name, arguments)
        except UnknownToolError as e:
            raise ToolException(str(e)) from None

    # -- conversion ------------------------------------------------------------------------------
    def tool(self, name: str) -> SiftedTool:
        """The LangChain tool of the catalog's tool ``name`` (made once, then kept; converting is
        not authorizing: a run still checks the caller)."""
        found = self._converted.get(name)
        if found is None:
            try:
                position = self.index.position(name)
            except KeyError:
                raise UnknownToolError(name) from None
            found = self._converted[name] = self.convert(self.index.tool(position))
        return found

    def convert(self, tool: Tool) -> SiftedTool:
        """``tool`` as a :class:`SiftedTool` that runs through this toolset."""

        def run(arguments: Mapping[str, Any]) -> Any:
            return self.run(tool.name, arguments)

        async def arun(arguments: Mapping[str, Any]) -> Any:
            return await self.arun(tool.name, arguments)

        return SiftedTool(
            name=tool.name,
            description=tool.description,
            args_schema=copy.deepcopy(dict(tool.parameters)),  # the catalog's schema stays intact
            func=run,
            coroutine=arun,
            handle_tool_error=True,
        )

    def tools(self, config: RunnableConfig | None = None) -> list[SiftedTool]:
        """Every tool the caller of ``config`` may use, in registry order."""
        perms = self.caller_of(config)
        return [self.tool(n) for n in self.index.names if self.index.allows(n, caller=perms)]

    def registry(self) -> dict[str, SiftedTool]:
        """Every tool of the catalog by name: langgraph-bigtool's ``tool_registry`` (tool ids are
        names). Each still checks the caller's permission when it runs."""
        return {n: self.tool(n) for n in self.index.names}

    # -- choosing tools --------------------------------------------------------------------------
    def retrieve_tools(self, query: str, config: RunnableConfig) -> list[str]:
        """Retrieve tools to use, given a search query."""
        return [h.tool.name for h in self.index.search(query, k=self.k, caller=self.caller_of(config))]

    async def aretrieve_tools(self, query: str, config: RunnableConfig) -> list[str]:
        """Retrieve tools to use, given a search query."""
        return self.retrieve_tools(query, config)

    def select(
        self,
        messages: Iterable[BaseMessage | Mapping[str, Any] | Any],
        config: RunnableConfig | None = None,
        *,
        budget_tokens: int | None = None,
        group: str | Sequence[str] | None = None,
        groups: int | None = None,
    ) -> list[SiftedTool]:
        """The tools for this turn (:meth:`Toolbox.select <toolsift.Toolbox.select>`): chosen from
        the conversation within ``budget_tokens``, core tools first; tools the conversation has
        already called stay loaded."""
        box = self.toolbox(config)
        converted = to_openai_messages(messages)
        for entry in converted:
            for call in entry.get("tool_calls", ()):
                box.used[call["function"]["name"]] = 1
        chosen = box.select(converted, budget_tokens=budget_tokens, format="mcp", group=group, groups=groups)
        return [self.tool(d["name"]) for d in chosen]

    def model(self, llm: Any, *, budget_tokens: int | None = None) -> Callable[[Any, Any], Runnable[Any, Any]]:
        """A dynamic model for ``create_react_agent``: each step binds :meth:`select`'s tools for
        the conversation so far (and the run's caller) to ``llm``."""
        from langgraph.config import get_config

        def pick(state: Any, runtime: Any) -> Runnable[Any, Any]:
            messages = state["messages"] if isinstance(state, Mapping) else state.messages
            tools = self.select(messages, get_config(), budget_tokens=budget_tokens)
            bound: Runnable[Any, Any] = llm.bind_tools(tools)
            return bound

        return pick

    # -- executing -------------------------------------------------------------------------------
    def tool_node(self, tools: Sequence[BaseTool] | None = None, **options: Any) -> ToolNode:
        """A ``ToolNode`` (of ``tools``, default every tool) that refuses, before anything runs,
        a call of a toolsift tool the run's caller may not use, and a call of a name it does not
        have, with the same error ``ToolMessage`` (``"unknown tool 'name'"``), naming no other
        tool (a plain ``ToolNode`` lists every tool it has). ``options`` go to ``ToolNode``.

        Give ``create_react_agent`` this node with :meth:`model` (``create_react_agent(
        toolset.model(llm), toolset.tool_node())``), never with the chat model itself: given a
        plain model, it binds every tool of the node, and the model would read the definitions
        of tools the caller may not use (their calls are still refused here)."""
        chosen = list(self.registry().values()) if tools is None else list(tools)
        return ToolNode(chosen, wrap_tool_call=self._guard, awrap_tool_call=self._aguard, **options)

    def _refusal(self, request: ToolCallRequest) -> ToolMessage | None:
        call, tool = request.tool_call, request.tool
        runs = tool is not None and (not isinstance(tool, SiftedTool) or self._allowed(call["name"], request))
        if runs:  # another framework's tool in the node is its own business
            return None
        return ToolMessage(
            str(UnknownToolError(call["name"])), name=call["name"], tool_call_id=call["id"], status="error"
        )

    def _allowed(self, name: str, request: ToolCallRequest) -> bool:
        return self.index.allows(name, caller=self.caller_of(request.runtime.config))

    def _guard(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        refused = self._refusal(request)
        return refused if refused is not None else execute(request)

    async def _aguard(self, request: ToolCallRequest, execute: Callable[[ToolCallRequest], Any]) -> Any:
        refused = self._refusal(request)
        return refused if refused is not None else await execute(request)

    def _select_node(self) -> Runnable[Any, Any]:
        """bigtool's retrieval node: each ``retrieve_tools`` call is answered with the tools found
        for the run's caller, worded as bigtool words it, and their names join the thread's. A
        call whose ``query`` is not text, or that the index refuses, gets an error ``ToolMessage``
        saying why, as a tool's bad arguments do (bigtool's node raised pydantic's error)."""

        def select(calls: list[dict[str, Any]], config: RunnableConfig) -> dict[str, Any]:
            messages, ids = [], []
            for c in calls:
                args = c.get("args")
                query = args.get("query") if isinstance(args, Mapping) else None
                try:
                    if not isinstance(query, str):
                        raise InvalidParameterError(f"{RETRIEVE}: query must be a string, not {type(query).__name__}")
                    found = self.retrieve_tools(query, config)
                except ToolsiftError as e:
                    messages.append(ToolMessage(str(e), name=RETRIEVE, tool_call_id=c["id"], status="error"))
                    continue
                messages.append(ToolMessage(f"Available tools: {found}", name=RETRIEVE, tool_call_id=c["id"]))
                ids.extend(found)
            return {"messages": messages, "selected_tool_ids": ids}

        async def aselect(calls: list[dict[str, Any]], config: RunnableConfig) -> dict[str, Any]:
            return select(calls, config)

        return RunnableLambda(select, afunc=aselect, name="select_tools")

    def _model_node(self, llm: Any) -> Runnable[Any, Any]:
        """bigtool's model node, binding the retrieval tool and the thread's retrieved tools that
        the run's caller may use (bigtool's binds every id in the thread's state)."""
        retrieve = StructuredTool.from_function(func=self.retrieve_tools, coroutine=self.aretrieve_tools)

        def bound(state: Any, config: RunnableConfig) -> Any:
            perms = self.caller_of(config)
            ids = (i for i in state["selected_tool_ids"] if isinstance(i, str) and self.index.allows(i, caller=perms))
            return llm.bind_tools([retrieve, *(self.tool(i) for i in dict.fromkeys(ids))])

        def call_model(state: Any, config: RunnableConfig) -> Any:
            return {"messages": [bound(state, config).invoke(state["messages"], config)]}

        async def acall_model(state: Any, config: RunnableConfig) -> Any:
            return {"messages": [await bound(state, config).ainvoke(state["messages"], config)]}

        return RunnableLambda(call_model, afunc=acall_model, name="agent")

    def bigtool_agent(self, llm: Any, **options: Any) -> StateGraph[Any, Any, Any, Any]:
        """langgraph-bigtool's ``create_agent(llm, registry, retrieve_tools_function=...,
        retrieve_tools_coroutine=...)`` for this toolset, with :meth:`tool_node` as its tool node.

        Its router is replaced by one that routes the same way without
        ``ToolNode.inject_tool_args`` (gone since langgraph-prebuilt 1.0, which breaks bigtool
        0.0.3 on the first real tool call); the tool node injects arguments when it runs. Its
        model node is replaced by one that binds, of the tools the thread has retrieved, only
        those the run's caller may use (a thread's state keeps them for its later turns, which
        another caller may run), and its retrieval node by one that answers a bad query with an
        error message to the model. Returns the uncompiled graph: ``.compile(checkpointer=...)``
        it."""
        from langgraph_bigtool import create_agent

        if RETRIEVE in self.index.names:
            raise InvalidToolError("the name is bigtool's retrieval tool", tool=RETRIEVE, field="name")
        builder: StateGraph[Any, Any, Any, Any] = create_agent(
            llm,
            self.registry(),
            retrieve_tools_function=self.retrieve_tools,
            retrieve_tools_coroutine=self.aretrieve_tools,
            **options,
        )
        spec = builder.nodes["tools"]
        builder.nodes["tools"] = dataclasses.replace(spec, runnable=self.tool_node())
        builder.nodes["agent"] = dataclasses.replace(builder.nodes["agent"], runnable=self._model_node(llm))
        builder.nodes["select_tools"] = dataclasses.replace(builder.nodes["select_tools"], runnable=self._select_node())
        branches = builder.branches["agent"]
        for name, branch in branches.items():
            branches[name] = branch._replace(path=RunnableLambda(_route, name=name))
        return builder


def _route(state: Any) -> Any:
    """bigtool's router: retrieval calls to ``select_tools``, every other call to ``tools``."""
    last = state["messages"][-1]
    if not isinstance(last, AIMessage) or not last.tool_calls:
        return END
    return [Send("select_tools" if c["name"] == RETRIEVE else "tools", [c]) for c in last.tool_calls]
