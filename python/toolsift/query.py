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
_TEXT_BLOCKS = ("text", "input_text", "output_text")  # a tuple: a "type" of a list compares unequal


def _plain(item: Any) -> Any:
    """``item`` as plain data: an SDK's pydantic object (an OpenAI ``ChatCompletionMessage``, a
    Responses output item, an Anthropic ``TextBlock``) as the dict it stands for."""
    dump = getattr(item, "model_dump", None)
    return dump(exclude_none=True) if callable(dump) else item


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    """The content blocks of a block list (plain dicts or SDK objects; anything else skipped)."""
    if not isinstance(content, Iterable) or isinstance(content, str | bytes | Mapping):
        return []
    return [b for b in map(_plain, content) if isinstance(b, Mapping)]


def _text(content: Any) -> str:
    """The text of a message's content: a string, or the text blocks of a block list."""
    if isinstance(content, str):
        return content
    texts = [b.get("text") for b in _blocks(content) if b.get("type") in _TEXT_BLOCKS]
    return "\n".join(t for t in texts if isinstance(t, str))


def _calls_tools(message: Mapping[str, Any]) -> bool:
    """Whether ``message`` is an assistant message or a Responses ``function_call`` item."""
    return message.get("role") == "assistant" or message.get("type") == "function_call"


def _tool_names(message: Mapping[str, Any]) -> list[str]:
    """Names of the tools an assistant message calls (OpenAI ``tool_calls``, Anthropic ``tool_use``)
    or a Responses ``function_call`` item calls."""
    if message.get("type") == "function_call":
        return [message["name"]] if isinstance(message.get("name"), str) and message["name"] else []
    functions = (c.get("function") for c in _blocks(message.get("tool_calls")))
    names = [f.get("name") for f in functions if isinstance(f, Mapping)]
    names += [b.get("name") for b in _blocks(message.get("content")) if b.get("type") == "tool_use"]
    return [n for n in names if isinstance(n, str) and n]


def _messages(messages: Any) -> list[Mapping[str, Any]]:
    """``messages`` as a list of mappings (SDK objects dumped), or :class:`InvalidParameterError`."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        kind = type(messages).__name__
        raise InvalidParameterError(f"messages must be a list of messages, not {kind}")
    out = []
    for i, message in enumerate(map(_plain, messages)):
        if not isinstance(message, Mapping):
            raise InvalidParameterError(
                f"message {i} must be a mapping (or an SDK message object), not {type(message).__name__}"
            )
        out.append(message)
    return out


def _number(what: str, value: object, most: float = MAX_WEIGHT) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= most:
        raise InvalidParameterError(f"{what} must be a number in [0, {most:g}], not {value!r}")
    return float(value)


@dataclass(frozen=True)
class Query:
    """Weighted pieces of query text; a term counts once, with the largest weight of the pieces it
    occurs in.

    Args:
        parts: ``(text, weight)`` pairs; weights are numbers in ``[0, MAX_WEIGHT]`` (1e6).
    """

    parts: tuple[tuple[str, float], ...]

    def __post_init__(self) -> None:
        if isinstance(self.parts, str | bytes | Mapping) or not isinstance(self.parts, Iterable):
            raise InvalidParameterError(f"query parts must be (text, weight) pairs, not {type(self.parts).__name__}")
        parts = []
        for part in self.parts:
            if not isinstance(part, tuple | list) or len(part) != 2:
                raise InvalidParameterError(f"a query part must be a (text, weight) pair, not {part!r}")
            text, weight = part
            check_text("query text", text)
            if (
                isinstance(weight, bool)
                or not isinstance(weight, int | float)
                or not 0 <= weight <= MAX_WEIGHT  # first: an int past the largest float is refused here
                or not math.isfinite(weight)
            ):
                raise InvalidParameterError(f"query weight must be a number in [0, {MAX_WEIGHT:g}], not {weight!r}")
            parts.append((str.__str__(text), float(weight)))
        # a copy, as checked: a list given as parts and changed later changes nothing
        object.__setattr__(self, "parts", tuple(parts))

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
        messages = _messages(messages)
        decay = _number("decay", decay, 1.0)  # the latest user message weighs most
        plan_weight, tool_weight = _number("plan_weight", plan_weight), _number("tool_weight", tool_weight)
        if isinstance(max_user_turns, bool) or not isinstance(max_user_turns, int) or max_user_turns < 0:
            raise InvalidParameterError(f"max_user_turns must be an int >= 0, not {max_user_turns!r}")
        check_text("plan", plan)
        not_names = isinstance(recent_tools, str | bytes) or not isinstance(recent_tools, Iterable)
        recent = [] if not_names else list(recent_tools)
        if not_names or not all(isinstance(n, str) for n in recent):
            raise InvalidParameterError("recent_tools must be a list of tool names (strings)")
        if isinstance(recent_tools, set | frozenset):
            recent.sort()  # a set's order changes from process to process (string hashing)
        parts: list[tuple[str, float]] = []
        users = [i for i, m in enumerate(messages) if m.get("role") == "user" and _text(m.get("content"))]
        for distance, i in enumerate(reversed(users[max(len(users) - max_user_turns, 0) :] if max_user_turns else [])):
            parts.append((_text(messages[i]["content"]), decay**distance))
        last_user = users[-1] if users else len(messages)
        before = [m for m in messages[:last_user] if m.get("role") == "assistant" and _text(m.get("content"))]
        if before:
            parts.append((_text(before[-1]["content"]), decay))
        if plan:
            parts.append((plan, plan_weight))
        tools = dict.fromkeys([n for m in messages if _calls_tools(m) for n in _tool_names(m)])
        tools.update(dict.fromkeys(recent))
        if tools:
            parts.append((" ".join(tools), tool_weight))
        return cls(tuple(parts))
