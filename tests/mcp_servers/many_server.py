"""An upstream with a catalog of any size (low-level SDK server, stdio, pages of 500): ``--tools N``
tools in groups of 40 (``g7__create_bucket_12``, as in ``tests/test_plan.py``), and with
``--huge CHARS`` one more tool, ``huge_manual``, whose description is that many characters long."""

from __future__ import annotations

import argparse

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOPICS = ["bucket", "queue", "table", "function", "instance", "volume", "secret", "stream", "domain", "cluster"]
VERBS = ["create", "delete", "describe", "list", "update", "tag", "copy", "restore"]
PAGE = 500

parser = argparse.ArgumentParser()
parser.add_argument("--tools", type=int, default=2_000)
parser.add_argument("--huge", type=int, default=0)
args = parser.parse_args()


def tool(i: int) -> types.Tool:
    group, topic, verb = f"g{i // 40}", TOPICS[(i // 40) % len(TOPICS)], VERBS[i % len(VERBS)]
    schema = {"type": "object", "properties": {"id": {"type": "string", "description": f"The {topic} id"}}}
    text = f"{verb.capitalize()} a {topic} ({i}).\nLonger text about the {topic} operation {i}."
    return types.Tool(name=f"{group}__{verb}_{topic}_{i}", description=text, input_schema=schema)


TOOLS = [tool(i) for i in range(args.tools)]
if args.huge:
    manual = "Read the operations manual of the zebracorn reactor. " + "All work and no play. " * args.huge
    TOOLS.append(types.Tool(name="huge_manual", description=manual[: args.huge], input_schema={"type": "object"}))


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran {params.name}")])


async def main() -> None:
    server = Server("many", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
