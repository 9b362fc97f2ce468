"""MCP gateway: ``toolsift serve --config gateway.toml`` fronts upstream MCP servers.

Needs the official MCP SDK: ``pip install 'toolsift[gateway]'``.
"""

from __future__ import annotations

from .config import CallerConfig, ClusterConfig, GatewayConfig, Rule, ServerConfig, load, parse

load_config = load

__all__ = ["CallerConfig", "ClusterConfig", "Gateway", "GatewayConfig", "Rule", "ServerConfig", "load_config", "parse"]


def __getattr__(name: str) -> object:
    if name == "Gateway":  # imports the mcp SDK only when a gateway is made
        from .server import Gateway

        return Gateway
    raise AttributeError(name)
