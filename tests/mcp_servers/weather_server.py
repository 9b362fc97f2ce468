"""A second upstream for the gateway tests: weather tools served over streamable HTTP."""

from __future__ import annotations

import argparse

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()
server = MCPServer("weather")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def get_forecast(city: str, days: int = 3) -> str:
    """Get the weather forecast (temperature, rain, wind) for a city."""
    return f"{city}: sunny for {days} days"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def get_air_quality(city: str) -> str:
    """Get the current air quality index and pollen levels for a city."""
    return f"{city}: AQI 21"


if __name__ == "__main__":
    anyio.run(lambda: server.run_streamable_http_async(host="127.0.0.1", port=args.port))
