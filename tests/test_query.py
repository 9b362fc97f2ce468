"""The query builder: conversation context so that a bare "yes, do it" still retrieves."""

from __future__ import annotations

import pytest

import toolsift as ts
from toolsift.errors import InvalidParameterError

CHAT = [
    {"role": "user", "content": "I was charged twice for my last order"},
    {"role": "assistant", "content": "I can refund the duplicate payment to your card. Shall I go ahead?"},
    {"role": "user", "content": "yes, do it"},
]


def test_a_bare_confirmation_retrieves_the_tool_under_discussion(support: ts.Index) -> None:
    caller = ["billing.refund", "orders.read"]
    assert support.search("yes, do it", caller=caller) == []
    hits = support.search(ts.Query.from_messages(CHAT), k=3, caller=caller)
    assert hits[0].tool.name == "issue_refund"
    assert "issue_refund" in support.select(ts.Query.from_messages(CHAT), caller=caller, budget_tokens=400).names


def test_latest_message_weighs_most_and_older_turns_decay() -> None:
    q = ts.Query.from_messages(
        [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}, {"role": "user", "content": "three"}],
        decay=0.5,
    )
    assert q.parts == (("three", 1.0), ("two", 0.5), ("one", 0.25))
    q = ts.Query.from_messages([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], max_user_turns=1)
    assert q.parts == (("b", 1.0),)


def test_plan_block_content_and_recently_called_tools_join_the_query() -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "where is my parcel"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"function": {"name": "order_status", "arguments": "{}"}}],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "name": "lookup_account", "input": {}}]},
    ]
    q = ts.Query.from_messages(messages, plan="track the shipment", recent_tools=["search_help"], tool_weight=0.3)
    assert ("where is my parcel", 1.0) in q.parts
    assert ("track the shipment", 0.5) in q.parts
    assert ("order_status lookup_account search_help", 0.3) in q.parts


def test_a_zero_weight_piece_changes_nothing(support: ts.Index) -> None:
    q = ts.Query((("order status", 1.0), ("delete account refund", 0.0)))
    assert support.search(q, caller=["orders.read", "admin"]) == support.search(
        "order status", caller=["orders.read", "admin"]
    )


@pytest.mark.parametrize(
    "parts", [(("x", -1.0),), (("x", float("nan")),), (("x", 1e39),), (("x", ts.MAX_WEIGHT * 2),), ((3, 1.0),)]
)
def test_bad_query_pieces_are_refused(parts: tuple) -> None:
    with pytest.raises(InvalidParameterError):
        ts.Query(parts)


def test_the_largest_and_smallest_weights_still_rank_like_plain_text(support: ts.Index) -> None:
    caller = ["orders.read", "admin", "billing.refund", "crm.read"]
    plain = [h.position for h in support.search("refund order", caller=caller)]
    for w in (ts.MAX_WEIGHT, 1e-30):
        assert [h.position for h in support.search(ts.Query((("refund order", w),)), caller=caller)] == plain
    with pytest.raises(InvalidParameterError):
        ts.Index([ts.Tool("a", "b")], field_weights={"name": 1e39})


RESPONSES_CHAT = [  # the same conversation as OpenAI Responses / Agents SDK input items
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": CHAT[0]["content"]}]},
    {"type": "function_call", "call_id": "c1", "name": "order_status", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "delivered"},
    {
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": CHAT[1]["content"], "annotations": []}],
    },
    {"role": "user", "content": "yes, do it"},  # an easy input message: a plain string
]


def test_responses_items_give_the_query_chat_messages_give() -> None:
    q = ts.Query.from_messages(RESPONSES_CHAT)
    assert q.parts == (
        ("yes, do it", 1.0),
        ("I was charged twice for my last order", 0.5),
        (CHAT[1]["content"], 0.5),
        ("order_status", 0.5),  # the function_call item is a recently used tool
    )


def test_a_bare_confirmation_in_responses_items_retrieves_the_tool_under_discussion(support: ts.Index) -> None:
    hits = support.search(ts.Query.from_messages(RESPONSES_CHAT), k=3, caller=["billing.refund", "orders.read"])
    assert hits[0].tool.name == "issue_refund"


def test_tool_outputs_reasoning_and_non_text_blocks_add_no_text() -> None:
    items = [
        {"type": "reasoning", "id": "r1", "summary": [{"type": "summary_text", "text": "refund everything"}]},
        {"type": "function_call_output", "call_id": "c1", "output": "delete all the files"},
        {"type": "message", "role": "user", "content": [{"type": "input_image", "image_url": "x"}]},
        {"type": "function_call", "call_id": "c2", "name": "", "arguments": "{}"},
    ]
    assert ts.Query.from_messages(items).parts == ()


def test_the_sdks_own_message_objects_give_the_query_their_dicts_give() -> None:
    """The documented SDK loops append the SDK's objects to the history (OpenAI's
    ``completion.choices[0].message``, Responses' ``response.output``, Anthropic's
    ``response.content``): they are read as the dicts they stand for."""
    from anthropic.types import TextBlock, ToolUseBlock
    from openai.types.chat import ChatCompletionMessage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    said = ChatCompletionMessage.model_validate(
        {
            "role": "assistant",
            "content": "Looking up the shipment",
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "track_shipment", "arguments": "{}"}}],
        }
    )
    chat = [{"role": "user", "content": "where is my order"}, said, {"role": "user", "content": "ok do it"}]
    blocks = [
        TextBlock(type="text", text="Looking up the shipment"),
        ToolUseBlock(type="tool_use", id="u", name="track_shipment", input={}),
    ]
    anthropic = [chat[0], {"role": "assistant", "content": blocks}, chat[2]]
    output = [
        ResponseOutputMessage(
            id="m",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text="Looking up the shipment", annotations=[])],
        ),
        ResponseFunctionToolCall(type="function_call", call_id="c", name="track_shipment", arguments="{}"),
    ]
    responses = [chat[0], *output, chat[2]]
    plain = ts.Query.from_messages([chat[0], said.model_dump(exclude_none=True), chat[2]])
    assert plain.parts == (
        ("ok do it", 1.0),
        ("where is my order", 0.5),
        ("Looking up the shipment", 0.5),
        ("track_shipment", 0.5),
    )
    assert (
        ts.Query.from_messages(chat) == ts.Query.from_messages(anthropic) == ts.Query.from_messages(responses) == plain
    )


@pytest.mark.parametrize(
    ("messages", "options", "says"),
    [
        ("where is my order", {}, "messages must be a list of messages"),
        ([None], {}, "message 0 must be a mapping"),
        ([{"role": "user", "content": "x"}], {"decay": "0.5"}, "decay must be a number in"),
        ([{"role": "user", "content": "x"}], {"decay": 1e300}, r"decay must be a number in \[0, 1\]"),
        ([{"role": "user", "content": "x"}], {"max_user_turns": 2.0}, "max_user_turns must be an int"),
        ([{"role": "user", "content": "x"}], {"max_user_turns": -1}, "max_user_turns must be an int >= 0"),
        ([{"role": "user", "content": "x"}], {"recent_tools": "get_order"}, "recent_tools must be a list"),
        ([{"role": "user", "content": "x"}], {"recent_tools": ["a", None]}, "recent_tools must be a list"),
    ],
)
def test_bad_history_arguments_are_refused_naming_them(messages: object, options: dict[str, object], says: str) -> None:
    with pytest.raises(InvalidParameterError, match=says):
        ts.Query.from_messages(messages, **options)  # type: ignore[arg-type]


def test_odd_but_legal_history_shapes_add_no_text_and_zero_user_turns_means_none() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": None}, {"type": "image_url", "image_url": {"url": "x"}}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": None}]},
        {"role": "user", "content": "refund it"},
    ]
    assert ts.Query.from_messages(history).parts == (("refund it", 1.0),)
    assert ts.Query.from_messages(history, max_user_turns=0).parts == ()


def test_a_query_keeps_its_own_copy_of_the_parts_it_checked() -> None:
    given = [("order status", 1.0)]
    query = ts.Query(given)  # type: ignore[arg-type]
    given.append(("\ud800", float("nan")))
    assert query.parts == (("order status", 1.0),) and hash(query) == hash(ts.Query((("order status", 1.0),)))
    for bad in ("abc", None, (("a",),)):
        with pytest.raises(InvalidParameterError):
            ts.Query(bad)  # type: ignore[arg-type]
