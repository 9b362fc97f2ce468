"""Tokenizer rules and field weighting, as a user of the Python API sees them."""

from __future__ import annotations

import pytest

import toolsift as ts
from toolsift.errors import InvalidParameterError


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("getOrderStatus", ["get", "order", "status"]),
        ("HTTPServerError", ["http", "server", "error"]),
        ("list_ec2-instances.v2", ["list", "ec2", "instanc", "v2"]),
        ("Café naïve RÉSUMÉ", ["cafe", "naiv", "resum"]),
        ("天气预报", ["天气", "气预", "预报"]),
        ("東京 weather", ["東京", "weather"]),
        ("running orders policies", ["run", "order", "polici"]),
        ("what is the weather in Paris", ["weather", "in", "pari"]),
        ("turn off the lights", ["turn", "off", "light"]),
    ],
)
def test_tokenizer_rules(text: str, tokens: list[str]) -> None:
    assert ts.tokenize(text) == tokens


def test_accented_and_cjk_queries_find_their_tools() -> None:
    idx = ts.Index([ts.Tool("menu", "Réserver une table au café"), ts.Tool("forecast", "天气预报 for a city")])
    assert idx.search("reserver cafe")[0].tool.name == "menu"
    assert idx.search("明天天气")[0].tool.name == "forecast"


def test_a_match_in_the_name_outweighs_one_in_the_description_unless_weights_say_otherwise() -> None:
    tools = [ts.Tool("archive_mail", "Store old items"), ts.Tool("store_items", "Archive the items you no longer need")]
    assert ts.Index(tools).search("archive")[0].tool.name == "archive_mail"
    flipped = ts.Index(tools, field_weights={"name": 0.2, "description": 3.0})
    assert flipped.search("archive")[0].tool.name == "store_items"
    assert ts.Index(tools, field_weights={"name": 0.0}).search("mail") == []


def test_per_field_b_and_bad_field_options_are_validated() -> None:
    tools = [ts.Tool("a", "x")]
    ts.Index(tools, b={"description": 0.0, "name": 1.0})
    ts.Index(tools, b=0.3)
    for bad in ({"description": 1.5}, {"nope": 0.5}, 2.0):
        with pytest.raises(InvalidParameterError):
            ts.Index(tools, b=bad)  # type: ignore[arg-type]


CALCULATOR = [
    ts.Tool("multiply", "Multiplies two integers and returns the product."),
    ts.Tool("add", "Adds two integers."),
    ts.Tool("summary_stats", "Mean, median and spread of a list of numbers."),
    ts.Tool("create_chart", "Draw a bar chart of values."),
]


def test_derivations_the_stemmer_keeps_apart_meet_through_their_prefix() -> None:
    idx = ts.Index(CALCULATOR)
    # multiplication -> multipl, multiply -> multipli; summarize -> summar, summary -> summari
    assert [h.tool.name for h in idx.search("what is the multiplication of 3 and 2")] == ["multiply"]
    assert idx.search("summarize these numbers")[0].tool.name == "summary_stats"
    words_only = ts.Index(CALCULATOR, prefix_weight=0)
    assert words_only.search("what is the multiplication of 3 and 2") == []
    # the word itself still counts more than a shared prefix
    assert idx.search("multiply")[0].score > idx.search("multiplication")[0].score


def test_a_word_repeated_in_a_request_counts_once() -> None:
    idx = ts.Index(CALCULATOR)
    once = [(h.tool.name, h.score) for h in idx.search("add the numbers")]
    assert [(h.tool.name, h.score) for h in idx.search("add add add the numbers, add them")] == once


@pytest.mark.parametrize("bad", [-0.1, float("nan"), True, "0.4", 2e6])
def test_bad_prefix_weights_are_refused(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="prefix_weight"):
        ts.Index(CALCULATOR, prefix_weight=bad)  # type: ignore[arg-type]
