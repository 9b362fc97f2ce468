"""An upstream that lists its tools in pages of 10 (low-level SDK server, stdio)."""

from __future__ import annotations

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

WORDS = "amber basalt cobalt dune ember fjord garnet heron indigo jasper kelp lichen marble nectar onyx "
WORDS += "pumice quartz raven saffron tundra umber violet walnut xenon yarrow"
TOOLS = [
    types.Tool(name=f"lookup_{w}", description=f"Look up facts about {w}.", input_schema={"type": "object"})
    for w in WORDS.split()
]
PAGE = 10


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"facts from {params.name}")])


async def main() -> None:
    server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
