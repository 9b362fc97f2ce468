"""An upstream MCP server (official SDK, stdio) that lists the tools of a toolsift JSONL catalog in
pages of 500 and answers every call with the tool's name: the gateway's upstream in
``benches/scale.py``. With ``--huge-every K --huge-chars C`` every K-th tool's description is
padded to C characters (upstreams with megabyte descriptions).

    python benches/catalog_server.py tools.jsonl [--huge-every 1000 --huge-chars 1000000]
"""

from __future__ import annotations

import argparse

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

import toolsift as ts

PAGE = 500
parser = argparse.ArgumentParser()
parser.add_argument("catalog")
parser.add_argument("--huge-every", type=int, default=0)
parser.add_argument("--huge-chars", type=int, default=1_000_000)
args = parser.parse_args()


def described(i: int, text: str) -> str:
    if not args.huge_every or i % args.huge_every:
        return text
    return (text + " " + "Further notes on this operation. " * (args.huge_chars // 33 + 1))[: args.huge_chars]


TOOLS = [
    types.Tool(name=t.name, description=described(i, t.description), input_schema=dict(t.parameters))
    for i, t in enumerate(ts.Catalog.from_file(args.catalog))
]


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])


async def main() -> None:
    server = Server("catalog", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
