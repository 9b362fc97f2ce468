"""toolsift in front of an in-process MCP server, driven by the official SDK's own client (both
its handshake-era and its 2026 per-request paths): no network, no LLM."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import jsonschema
import mcp_types as types
from mcp.client import Client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

import toolsift as ts
from helpers import readme_block
from toolsift.errors import InvalidParameterError
from toolsift.integrations.mcp import SEARCH_OUTPUT_SCHEMA, front

MODES = ["legacy", "auto"]
PERMISSIONS = {"order_status": "orders.read", "issue_refund": "billing.refund"}


def shop(ran: list[str]) -> MCPServer:
    server = MCPServer("shop")

    @server.tool()
    def order_status(order_id: str) -> str:
        """Get the shipping status of an order."""
        ran.append(f"order_status {order_id}")
        return f"order {order_id} shipped"

    @server.tool()
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund a customer order payment."""
        ran.append(f"issue_refund {order_id}")
        return "refunded"

    @server.tool()
    def refund_policy() -> str:
        """Explain the refund policy to the customer."""
        return "30 days"

    return server


def run(server: Any, mode: str, session: Callable[[Client], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        async with Client(server, mode=mode, cache=None) as client:
            return await session(client)

    return anyio.run(main)


def text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", MODES)
def test_clients_see_only_the_meta_tools_and_search_returns_declared_structured_content(mode: str) -> None:
    server = shop([])
    front(server, caller={"orders.read"}, permissions=PERMISSIONS)

    async def session(client: Client) -> tuple[list[types.Tool], types.CallToolResult]:
        listed = await client.list_tools()
        return listed.tools, await client.call_tool("tool_search", {"query": "refund the order payment status"})

    tools, found = run(server, mode, session)
    assert [t.name for t in tools] == ["tool_search", "call_tool"]
    assert tools[0].output_schema == SEARCH_OUTPUT_SCHEMA
    assert "issue_refund" not in str([t.model_dump() for t in tools])  # not even in a description
    assert not found.is_error
    structured = found.structured_content
    assert structured is not None
    jsonschema.validate(structured, SEARCH_OUTPUT_SCHEMA)
    assert [t["name"] for t in structured["tools"]] == ["order_status", "refund_policy"]
    status = structured["tools"][0]
    assert status["inputSchema"]["properties"]["order_id"]["type"] == "string"  # MCP naming, as served
    assert status["outputSchema"]["properties"]["result"]["type"] == "string"
    assert "parameters" not in status
    assert json.loads(text(found)) == structured  # the same, as text, for clients without structured content


@pytest.mark.parametrize("mode", MODES)
def test_a_hidden_tool_fails_like_a_missing_one_through_call_tool_and_by_name(mode: str) -> None:
    ran: list[str] = []
    server = shop(ran)
    front(server, caller={"orders.read"}, permissions=PERMISSIONS)

    async def session(client: Client) -> list[types.CallToolResult]:
        return [
            await client.call_tool("call_tool", {"name": "order_status", "arguments": {"order_id": "A7"}}),
            await client.call_tool("call_tool", {"name": "issue_refund", "arguments": {"order_id": "A7", "amount": 5}}),
            await client.call_tool("issue_refund", {"order_id": "A7", "amount": 5}),
            await client.call_tool("call_tool", {"name": "no_such_tool", "arguments": {}}),
            await client.call_tool("no_such_tool", {}),
            await client.call_tool("order_status", {"order_id": "B2"}),
        ]

    ok, hidden, hidden_by_name, missing, missing_by_name, by_name = run(server, mode, session)
    assert not ok.is_error and text(ok) == "order A7 shipped"
    assert (hidden.is_error, text(hidden)) == (True, "Unknown tool: issue_refund")
    assert (hidden_by_name.is_error, text(hidden_by_name)) == (True, "Unknown tool: issue_refund")
    assert (missing.is_error, text(missing)) == (True, "Unknown tool: no_such_tool")
    assert (missing_by_name.is_error, text(missing_by_name)) == (True, "Unknown tool: no_such_tool")
    assert text(by_name) == "order B2 shipped"  # a tool the caller may use is callable by name too
    assert ran == ["order_status A7", "order_status B2"]


def lowlevel(pages: list[list[types.Tool]], ran: list[str]) -> Server[Any]:
    """A low-level server that lists its tools over several pages."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        page = int(params.cursor) if params is not None and params.cursor else 0
        following = str(page + 1) if page + 1 < len(pages) else None
        return types.ListToolsResult(tools=pages[page], next_cursor=following)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        ran.append(params.name)
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])

    return Server("files", on_list_tools=list_tools, on_call_tool=call_tool)


def tool(name: str, description: str, **extra: Any) -> types.Tool:
    return types.Tool(name=name, description=description, input_schema={"type": "object", "properties": {}}, **extra)


def test_a_lowlevel_server_is_read_over_all_its_pages_and_each_request_names_its_caller() -> None:
    ran: list[str] = []
    pages = [
        [tool("read_file", "Read a text file", title="Read")],
        [tool("delete_file", "Delete a file from disk"), tool("list_dir", "List the files of a directory")],
    ]
    server = lowlevel(pages, ran)
    current: dict[str, Any] = {"caller": ["files"]}

    async def caller(ctx: Any) -> Any:
        assert ctx.method in ("tools/list", "tools/call")
        return current["caller"]

    permissions = {"read_file": "files", "list_dir": "files", "delete_file": ["files", "admin"]}
    front(server, caller=caller, permissions=permissions, pinned=["read_file", "delete_file"])

    async def session(client: Client) -> list[Any]:
        out: list[Any] = [await client.list_tools()]
        out.append(await client.call_tool("call_tool", {"name": "delete_file", "arguments": {}}))
        current["caller"] = ["files", "admin"]
        out.append(await client.list_tools())
        out.append(await client.call_tool("tool_search", {"query": "delete a file"}))
        out.append(await client.call_tool("call_tool", {"name": "delete_file", "arguments": {}}))
        return out

    reader, refused, admin, found, deleted = run(server, "legacy", session)
    assert [t.name for t in reader.tools] == ["read_file", "tool_search", "call_tool"]
    assert reader.tools[0].title == "Read"  # a pinned tool goes out as the server defines it
    assert "list_dir" in (reader.tools[1].description or "") and "delete_file" not in (
        reader.tools[1].description or ""
    )
    assert text(refused) == "Unknown tool: delete_file"
    assert [t.name for t in admin.tools] == ["delete_file", "read_file", "tool_search", "call_tool"]
    assert found.structured_content["tools"][0]["name"] == "delete_file"
    assert text(deleted) == "ran delete_file"
    assert ran == ["delete_file"]


def test_a_definition_change_that_is_not_indexed_is_still_served_as_the_server_lists_it() -> None:
    pages = [[tool("read_file", "Read a text file")]]
    server = lowlevel(pages, [])
    front(server, caller=None)

    async def session(client: Client) -> list[types.CallToolResult]:
        before = await client.call_tool("tool_search", {"query": "read file"})
        schema = {"type": "object", "properties": {"text": {"type": "string"}}}
        pages[0] = [tool("read_file", "Read a text file", output_schema=schema)]
        return [before, await client.call_tool("tool_search", {"query": "read file"})]

    before, after = run(server, "auto", session)
    assert "outputSchema" not in before.structured_content["tools"][0]
    assert after.structured_content["tools"][0]["outputSchema"]["properties"] == {"text": {"type": "string"}}


def test_tools_the_server_adds_later_are_found_and_hooks_see_the_real_tool() -> None:
    ran: list[str] = []
    server = shop(ran)
    events: list[ts.ToolEvent] = []
    front(server, caller=("orders.read",), permissions=PERMISSIONS, hooks=ts.Hooks(before_tool=events.append))

    async def session(client: Client) -> list[types.CallToolResult]:
        before = await client.call_tool("tool_search", {"query": "weather forecast"})

        def weather(city: str) -> str:
            """Weather forecast for a city."""
            return f"sunny in {city}"

        server.add_tool(weather)
        after = await client.call_tool("tool_search", {"query": "weather forecast"})
        called = await client.call_tool("call_tool", {"name": "weather", "arguments": {"city": "Oslo"}})
        return [before, after, called]

    before, after, called = run(server, "auto", session)
    assert before.structured_content == {"tools": []}
    assert [t["name"] for t in after.structured_content["tools"]] == ["weather"]
    assert text(called) == "sunny in Oslo"
    assert [(e.name, dict(e.arguments), e.via, e.caller) for e in events] == [
        ("weather", {"city": "Oslo"}, "call_tool", ("orders.read",))
    ]


def test_a_hook_that_refuses_a_call_gives_the_client_an_error_result() -> None:
    """A `before_tool` hook refuses a call by raising: that escaped the handler, and the client
    got a protocol error ("Internal server error") instead of a result."""
    ran: list[str] = []
    server = shop(ran)

    def refuse(event: ts.ToolEvent) -> None:
        raise PermissionError(f"policy: {event.name} needs an approval")

    front(server, caller=("orders.read",), permissions=PERMISSIONS, hooks=ts.Hooks(before_tool=refuse))

    async def session(client: Client) -> list[types.CallToolResult]:
        return [await client.call_tool("call_tool", {"name": "order_status", "arguments": {"order_id": "A7"}})]

    [refused] = run(server, "auto", session)
    assert refused.is_error and "refused" in text(refused) and "approval" not in text(refused)
    assert ran == []


def test_bad_requests_and_bad_setups_name_what_is_wrong() -> None:
    server = shop([])
    front(server, caller=None, permissions=PERMISSIONS)

    async def session(client: Client) -> list[types.CallToolResult]:
        return [
            await client.call_tool("tool_search", {"query": "refund", "limit": -1}),
            await client.call_tool("call_tool", {"name": 7, "arguments": {}}),
        ]

    bad_limit, bad_name = run(server, "legacy", session)
    assert bad_limit.is_error and "limit" in text(bad_limit)
    assert bad_name.is_error and "call_tool needs a string 'name'" in text(bad_name)
    with pytest.raises(InvalidParameterError, match="mapping"):
        front(shop([]), caller={"orders.read": True})  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="MCPServer"):
        front(object(), caller=None)
    with pytest.raises(InvalidParameterError, match="no tools/list"):
        front(Server("empty"), caller=None)
    with pytest.raises(InvalidParameterError, match="statistics"):
        front(shop([]), caller=None, statistics="tenant")
    with pytest.raises(InvalidParameterError, match="already in front"):
        front(server, caller=None)
    with pytest.raises(InvalidParameterError, match="pinned must be a list of tool names, not str"):
        front(shop([]), caller=None, pinned="order_status")
    with pytest.raises(InvalidParameterError, match="front hooks must be Hooks, not str"):
        front(shop([]), caller=None, hooks="audit")  # type: ignore[arg-type]  # failed every call, later


def test_callers_with_the_same_permissions_share_a_plan_and_only_the_recent_ones_are_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from toolsift.integrations import mcp as adapter

    monkeypatch.setattr(adapter, "BOXES_KEPT", 3)
    server = lowlevel([[tool("read_file", "Read a text file"), tool("list_dir", "List a directory")]], [])
    current: dict[str, Any] = {}

    async def caller(ctx: Any) -> Any:
        return current["caller"]

    fronted = front(server, caller=caller, permissions={"read_file": "files"})
    callers = [["files", "user:1"], ["user:1", "files"], ["user:1", "files", "files"]]
    callers += [["files", f"user:{i}"] for i in range(2, 6)]

    async def session(client: Client) -> list[list[str]]:
        listed = []
        for held in callers:
            current["caller"] = held
            listed.append([t.name for t in (await client.list_tools()).tools])
        return listed

    listed = run(server, "legacy", session)
    assert all(names == listed[0] for names in listed)
    version = fronted._version
    assert version is not None
    assert list(version.boxes) == [("files", f"user:{i}") for i in (3, 4, 5)]  # the last three callers


def test_a_server_tool_named_like_a_meta_tool_is_left_out_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer("clash")

    @server.tool()
    def tool_search(query: str) -> str:
        """A tool of the same name as toolsift's."""
        return query

    @server.tool()
    def read_file(path: str) -> str:
        """Read a text file."""
        return f"read {path}"

    fronted = front(server, caller=None)

    async def main() -> None:
        async with Client(server, mode="legacy", cache=None) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["tool_search", "call_tool"]
            ctx: Any = None
            assert (await fronted.current(ctx)).index.names == ["read_file"]
            result = await client.call_tool("call_tool", {"name": "read_file", "arguments": {"path": "a"}})
            assert text(result) == "read a"

    with caplog.at_level("WARNING", logger="toolsift.integrations.mcp"):
        anyio.run(main)
    assert "tool 'tool_search'" in caplog.text and "reserved" in caplog.text


def test_one_bad_definition_costs_that_tool_only_and_no_caller_hears_its_name(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []
    odd = types.Tool(name="odd", description="odd tool", input_schema={"type": "string"})
    pages = [[tool("read_file", "Read a file"), tool("list_dir", "List a folder"), tool("list_dir", "Again"), odd]]
    server = lowlevel(pages, ran)
    front(server, caller=None, permissions={"odd": "admin", "list_dir": "admin"})  # the public caller: read_file

    async def main() -> None:
        async with Client(server, mode="legacy", cache=None) as client:
            listed = (await client.list_tools()).tools
            assert "odd" not in str(listed) and "list_dir" not in str(listed)
            result = await client.call_tool("call_tool", {"name": "read_file", "arguments": {}})
            assert (result.is_error, text(result)) == (False, "ran read_file")
            refused = await client.call_tool("call_tool", {"name": "odd", "arguments": {}})
            assert (refused.is_error, text(refused)) == (True, "Unknown tool: odd")

    with caplog.at_level("WARNING", logger="toolsift.integrations.mcp"):
        anyio.run(main)
    assert ran == ["read_file"]
    assert "tool 'list_dir': the server lists this name twice" in caplog.text and "tool 'odd'" in caplog.text


def test_a_name_twice_in_another_unicode_form_or_a_bad_permission_costs_only_that_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Either failed every caller's listing and call (the whole catalog was refused), with an
    error that named the restricted tools to callers who may not use them."""
    ran: list[str] = []
    composed, decomposed = "caf\u00e9_export", "cafe\u0301_export"
    pages = [[tool("read_file", "Read a file"), tool(composed, "Export payroll"), tool(decomposed, "Export it all")]]
    pages[0].append(tool("wipe_disk", "Delete every file"))
    server = lowlevel(pages, ran)
    front(server, caller=None, permissions={composed: "payroll", decomposed: "payroll", "wipe_disk": 7})

    async def main() -> None:
        async with Client(server, mode="legacy", cache=None) as client:
            listed = (await client.list_tools()).tools
            assert [t.name for t in listed] == ["tool_search", "call_tool"] and "export" not in str(listed).lower()
            result = await client.call_tool("call_tool", {"name": "read_file", "arguments": {}})
            assert (result.is_error, text(result)) == (False, "ran read_file")
            for hidden in (composed, decomposed, "wipe_disk"):
                refused = await client.call_tool("call_tool", {"name": hidden, "arguments": {}})
                assert (refused.is_error, text(refused)) == (True, f"Unknown tool: {hidden}")

    with caplog.at_level("WARNING", logger="toolsift.integrations.mcp"):
        anyio.run(main)
    assert ran == ["read_file"]
    assert "Unicode normalisation" in caplog.text and "tool 'wipe_disk', field 'permissions'" in caplog.text


def test_a_permission_named_in_another_unicode_form_than_the_listing_still_applies(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The mapping was read by exact name: a server listing "café" decomposed, where the mapping
    has it composed, served that tool to every caller as public."""
    ran: list[str] = []
    composed, decomposed = "caf\u00e9_refund", "cafe\u0301_refund"
    server = lowlevel([[tool("read_file", "Read a file"), tool(decomposed, "Refund a payment")]], ran)
    current: dict[str, Any] = {"caller": None}
    front(server, caller=lambda ctx: current["caller"], permissions={composed: "billing"})

    async def main() -> list[tuple[bool, str]]:
        async with Client(server, mode="legacy", cache=None) as client:
            answers = []
            for caller in (None, "billing"):
                current["caller"] = caller
                found = await client.call_tool("tool_search", {"query": "refund a payment"})
                names = [t["name"] for t in found.structured_content["tools"]]
                result = await client.call_tool("call_tool", {"name": decomposed, "arguments": {}})
                answers.append((decomposed in names, text(result)))
            return answers

    with caplog.at_level("WARNING", logger="toolsift.integrations.mcp"):
        answers = anyio.run(main)
    assert answers == [(False, f"Unknown tool: {decomposed}"), (True, f"ran {decomposed}")]
    assert ran == [decomposed] and "the server does not list" not in caplog.text


@pytest.mark.parametrize(
    "other",
    [
        types.Tool(name="read_file", description="Delete every file on disk", input_schema={"type": "object"}),
        types.Tool(name="read_file", description="Broken", input_schema={"type": "array"}),  # not indexable
    ],
    ids=["second", "invalid first"],
)
def test_a_name_listed_twice_is_served_as_the_definition_indexed(other: types.Tool) -> None:
    """The first was indexed and the last served; then, with an invalid first, the first served."""
    good = types.Tool(name="read_file", description="Read a text file", input_schema={"type": "object"})
    pages = [[good, other]] if other.description != "Broken" else [[other, good]]
    server = lowlevel(pages, [])
    front(server, caller=None, pinned=["read_file"])

    async def main() -> tuple[list[types.Tool], Any]:
        async with Client(server, mode="legacy", cache=None) as client:
            listed = (await client.list_tools()).tools
            return listed, await client.call_tool("tool_search", {"query": "read a text file"})

    listed, found = anyio.run(main)
    assert [t.description for t in listed if t.name == "read_file"] == ["Read a text file"]
    assert [t["description"] for t in found.structured_content["tools"]] == ["Read a text file"]


def test_permissions_withdrawn_at_run_time_apply_to_the_next_request() -> None:
    """The permissions were read only when a definition changed: a tool an operator had just
    restricted still ran for every caller."""
    ran: list[str] = []
    server = lowlevel([[tool("read_file", "Read a file"), tool("delete_file", "Delete a file")]], ran)
    restricted: set[str] = set()
    front(server, caller=None, permissions=lambda name: "admin" if name in restricted else None)

    async def main() -> list[str]:
        async with Client(server, mode="legacy", cache=None) as client:
            answers = []
            for _ in range(2):
                result = await client.call_tool("call_tool", {"name": "delete_file", "arguments": {}})
                answers.append(text(result))
                restricted.add("delete_file")
            return answers

    assert anyio.run(main) == ["ran delete_file", "Unknown tool: delete_file"] and ran == ["delete_file"]


def test_a_permission_list_changed_in_place_applies_and_a_raising_function_costs_one_tool(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ran: list[str] = []
    server = lowlevel([[tool("read_file", "Read a file"), tool("delete_file", "Delete a file")]], ran)
    table = {"delete_file": ["files"]}
    front(server, caller={"files"}, permissions=table)
    other = lowlevel([[tool("read_file", "Read a file"), tool("export_payroll", "Export the payroll")]], ran)
    front(other, caller=None, permissions=lambda name: {"read_file": None}[name])  # KeyError for the other

    async def main() -> list[str]:
        answers = []
        async with Client(server, mode="legacy", cache=None) as client:
            for _ in range(2):
                result = await client.call_tool("call_tool", {"name": "delete_file", "arguments": {}})
                answers.append(text(result))
                table["delete_file"].append("admin")  # the same list, tightened
        async with Client(other, mode="legacy", cache=None) as client:
            answers.append(text(await client.call_tool("call_tool", {"name": "read_file", "arguments": {}})))
            answers.append(text(await client.call_tool("call_tool", {"name": "export_payroll", "arguments": {}})))
        return answers

    with caplog.at_level("WARNING", logger="toolsift.integrations.mcp"):
        got = anyio.run(main)
    assert got == ["ran delete_file", "Unknown tool: delete_file", "ran read_file", "Unknown tool: export_payroll"]
    assert ran == ["delete_file", "read_file"] and "permissions('export_payroll') raised KeyError" in caplog.text


def test_readme_mcp_example_runs() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(readme_block("MCP servers"), "README.md", "exec"), namespace)

    async def session(client: Client) -> tuple[list[str], str]:
        listed = await client.list_tools()
        refused = await client.call_tool("call_tool", {"name": "issue_refund", "arguments": {"order_id": "7"}})
        return [t.name for t in listed.tools], text(refused)

    assert run(namespace["server"], "auto", session) == (["tool_search", "call_tool"], "Unknown tool: issue_refund")


def test_without_the_extra_the_import_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib
    import sys

    monkeypatch.setitem(sys.modules, "mcp_types", None)
    monkeypatch.delitem(sys.modules, "toolsift.integrations.mcp")
    with pytest.raises(ImportError, match=re.escape("pip install 'toolsift[mcp]'")):
        importlib.import_module("toolsift.integrations.mcp")
