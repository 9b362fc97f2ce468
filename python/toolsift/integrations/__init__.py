"""Adapters for agent frameworks, each a module behind its own extra; glue only, never a second engine.

- :mod:`toolsift.integrations.langgraph` — LangGraph and langgraph-bigtool (``pip install 'toolsift[langgraph]'``)
- :mod:`toolsift.integrations.mcp` — in front of an official-SDK MCP server's tools (``pip install 'toolsift[mcp]'``)
- :mod:`toolsift.integrations.openai_agents` — OpenAI Agents SDK (``pip install 'toolsift[openai-agents]'``)
- :mod:`toolsift.integrations.pydantic_ai` — PydanticAI (``pip install 'toolsift[pydantic-ai]'``)
"""
