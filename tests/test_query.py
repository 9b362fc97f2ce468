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
