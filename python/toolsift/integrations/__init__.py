"""Adapters for agent frameworks: one module per framework, each behind its own extra; glue only.

- :mod:`toolsift.integrations.langgraph`: LangGraph and langgraph-bigtool (extra ``langgraph``)
- :mod:`toolsift.integrations.mcp`: toolsift in front of an official-SDK MCP server's tools (extra ``mcp``)
- :mod:`toolsift.integrations.openai_agents`: OpenAI Agents SDK (extra ``openai-agents``)
- :mod:`toolsift.integrations.pydantic_ai`: PydanticAI (extra ``pydantic-ai``)
"""
