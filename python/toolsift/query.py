"""Queries built from a conversation, so that "yes, do it" still finds the tool being discussed.

A :class:`Query` is a list of weighted pieces of text. :meth:`Query.from_messages` takes the chat
history (OpenAI Chat Completions or Anthropic message dicts, or OpenAI Responses / Agents SDK input
items) and weighs the latest user message 1, each earlier
user message ``decay`` times the one after it, the assistant's last words (which usually name the
next step) ``decay``, and the plan and the names of recently used tools by their own weights.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .errors import InvalidParameterError

#: Largest query, field or ``k1`` weight (the core's bound, so that no score can overflow).
MAX_WEIGHT = 1e6


def check_text(what: str, value: object) -> str:
    """``value`` if it is a string that is valid Unicode (no lone surrogate, such as half of an
    emoji cut off), for text the core reads; raises :class:`InvalidParameterError` otherwise."""
    if not isinstance(value, str):
        raise InvalidParameterError(f"{what} must be a string, not {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidParameterError(f"{what} holds a lone surrogate ({value[e.start]!r}), not Unicode text") from None
    return value


#: Content block types that carry text: Chat Completions and Anthropic ``text``, Responses
#: ``input_text`` (user) and ``output_text`` (assistant).
_TEXT_BLOCKS = frozenset({"text", "input_text", "output_text"})


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    if isinstance(content, Iterable) and not isinstance(content, Mapping | bytes):
        blocks = [b for b in content if isinstance(b, Mapping) and b.get("type") in _TEXT_BLOCKS]
        return "\n".join(str(b.get("text", "")) for b in blocks)
    return ""


def _calls_tools(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is an assistant message or a Responses ``function_call`` item."""
    return message.get("role") == "assistant" or message.get("type") == "function_call"


def _tool_names(message: Mapping[str, Any]) -> list[str]:
    """Names of the tools an assistant message calls (OpenAI ``tool_calls``, Anthropic ``tool_use``)
    or a Responses ``function_call`` item calls."""
    if message.get("type") == "function_call":
        return [message["name"]] if isinstance(message.get("name"), str) and message["name"] else []
    names = [c.get("function", {}).get("name", "") for c in message.get("tool_calls") or [] if isinstance(c, Mapping)]
    content = message.get("content")
    if isinstance(content, list):
        names += [b.get("name", "") for b in content if isinstance(b, Mapping) and b.get("type") == "tool_use"]
    return [n for n in names if isinstance(n, str) and n]


@dataclass(frozen=True)
class Query:
    """Weighted pieces of query text; a term counts once, with the largest weight of the pieces it
    occurs in.

    Args:
        parts: ``(text, weight)`` pairs; weights are numbers in ``[0, MAX_WEIGHT]`` (1e6).
    """

    parts: tuple[tuple[str, float], ...]

    def __post_init__(self) -> None:
        for text, weight in self.parts:
            check_text("query text", text)
            if (
                isinstance(weight, bool)
                or not isinstance(weight, int | float)
                or not math.isfinite(weight)
                or not 0 <= weight <= MAX_WEIGHT
            ):
                raise InvalidParameterError(f"query weight must be a number in [0, {MAX_WEIGHT:g}], not {weight!r}")

    @classmethod
    def of(cls, query: str | Query) -> Query:
        """``query`` itself, or a one-piece query of weight 1 for a string."""
        if isinstance(query, Query):
            return query
        if not isinstance(query, str):
            raise InvalidParameterError(f"query must be a string or a Query, not {type(query).__name__}")
        return cls(((query, 1.0),))

    @classmethod
    def from_messages(
        cls,
        messages: Sequence[Mapping[str, Any]],
        *,
        plan: str = "",
        recent_tools: Iterable[str] = (),
        decay: float = 0.5,
        max_user_turns: int = 4,
        plan_weight: float = 0.5,
        tool_weight: float = 0.5,
    ) -> Query:
        """A query from chat history, latest user message first in weight.

        Args:
            messages: OpenAI or Anthropic style messages, or OpenAI Responses input items
                (``message``, ``function_call``, ``function_call_output``...), oldest first; items
                without a role, such as tool outputs and reasoning, add no text.
            plan: The agent's current plan or task description, if it keeps one.
            recent_tools: Names of tools used recently (tools called in ``messages`` are added).
            decay: Weight ratio between a user message and the next one; also the weight of the
                assistant's last text before the latest user message.
            max_user_turns: How many user messages, counting back from the latest, to use.
            plan_weight: Weight of ``plan``.
            tool_weight: Weight of the recent tool names.
        """
        parts: list[tuple[str, float]] = []
        users = [i for i, m in enumerate(messages) if m.get("role") == "user" and _text(m.get("content"))]
        for distance, i in enumerate(reversed(users[-max_user_turns:])):
            parts.append((_text(messages[i]["content"]), decay**distance))
        last_user = users[-1] if users else len(messages)
        before = [m for m in messages[:last_user] if m.get("role") == "assistant" and _text(m.get("content"))]
        if before:
            parts.append((_text(before[-1]["content"]), decay))
        if plan:
            parts.append((plan, plan_weight))
        tools = dict.fromkeys([n for m in messages if _calls_tools(m) for n in _tool_names(m)])
        tools.update(dict.fromkeys(recent_tools))
        if tools:
            parts.append((" ".join(tools), tool_weight))
        return cls(tuple(parts))
