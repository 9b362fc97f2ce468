"""Evaluation of tool retrieval: datasets, metrics, systems and the runner behind ``toolsift eval``."""

from .datasets import (
    BFCL_IRRELEVANCE,
    BFCL_SINGLE_TURN,
    Dataset,
    LabelledQuery,
    load_bfcl,
    load_files,
    load_gateway_log,
)
from .metrics import METRICS, score_query
from .replay import Replay, replay
from .runner import Result, evaluate, markdown, to_json
from .systems import BASELINES, System, toolsift_system

__all__ = [
    "BASELINES",
    "BFCL_IRRELEVANCE",
    "BFCL_SINGLE_TURN",
    "METRICS",
    "Dataset",
    "LabelledQuery",
    "Replay",
    "Result",
    "System",
    "evaluate",
    "load_bfcl",
    "load_files",
    "load_gateway_log",
    "markdown",
    "replay",
    "score_query",
    "to_json",
    "toolsift_system",
]
