"""The MiniLM encoder of :mod:`toolsift.minilm` as an ONNX graph, run with onnxruntime.

No ONNX file ships in a licensed package, so the graph is built in memory at first use from the
same ``model.safetensors`` with the ``onnx`` package's helper API: the operations of
:class:`toolsift.minilm.MiniLM`, step for step (embeddings, ``num_hidden_layers`` blocks of
attention and an erf GELU feed-forward, mean pooling over the attention mask, L2 normalisation),
so both produce the same vectors to float32 rounding. :class:`OnnxMiniLM` tokenizes, groups texts
of similar token length into batches (little padding) and runs the session; with
``int8_queries=True`` its :meth:`~OnnxMiniLM.embed_query` runs a second session whose matrix
weights are int8 (onnxruntime's dynamic quantisation, one scale per output column), about 0.7
times the time of a query in float32, while the tools' vectors stay float32.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

Array = Any  # float32 numpy arrays

IR_VERSION = 8
"""The ONNX IR version written (opset 17 needs 8; the ``onnx`` package's default may be newer than
the installed onnxruntime reads)."""


class _Graph:
    """Accumulates nodes and initializers; each method adds one step and returns its output name."""

    def __init__(self, weights: dict[str, Array]) -> None:
        from onnx import helper, numpy_helper

        self.helper, self.numpy_helper = helper, numpy_helper
        self.weights = weights
        self.nodes: list[Any] = []
        self.inits: dict[str, Any] = {}
        self.count = 0

    def const(self, name: str, value: Array) -> str:
        if name not in self.inits:
            self.inits[name] = self.numpy_helper.from_array(np.asarray(value), name)
        return name

    def weight(self, name: str, transpose: bool = False) -> str:
        w = self.weights[name]
        return self.const(name + (".T" if transpose else ""), np.ascontiguousarray(w.T if transpose else w))

    def op(self, kind: str, *inputs: str, **attrs: Any) -> str:
        self.count += 1
        out = f"{kind.lower()}_{self.count}"
        self.nodes.append(self.helper.make_node(kind, list(inputs), [out], **attrs))
        return out

    def dense(self, x: str, name: str) -> str:
        return self.op("Add", self.op("MatMul", x, self.weight(name + ".weight", True)), self.weight(name + ".bias"))

    def layer_norm(self, x: str, name: str, eps: float) -> str:
        return self.op("LayerNormalization", x, self.weight(name + ".weight"), self.weight(name + ".bias"), epsilon=eps)


def _block(g: _Graph, x: str, bias: str, p: str, config: dict[str, Any], eps: float) -> str:
    heads = int(config["num_attention_heads"])
    hidden = int(config["hidden_size"])
    size = hidden // heads
    split = g.const("split_shape", np.array([0, 0, heads, size], dtype=np.int64))
    merge = g.const("merge_shape", np.array([0, 0, hidden], dtype=np.int64))

    def heads_of(name: str, perm: list[int]) -> str:
        return g.op("Transpose", g.op("Reshape", g.dense(x, p + name), split), perm=perm)

    q = heads_of("attention.self.query", [0, 2, 1, 3])
    k = heads_of("attention.self.key", [0, 2, 3, 1])
    v = heads_of("attention.self.value", [0, 2, 1, 3])
    scale = g.const("attention_scale", np.array(math.sqrt(size), dtype=np.float32))
    scores = g.op("Add", g.op("Div", g.op("MatMul", q, k), scale), bias)
    ctx = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
    ctx = g.op("Reshape", g.op("Transpose", ctx, perm=[0, 2, 1, 3]), merge)
    x = g.layer_norm(g.op("Add", x, g.dense(ctx, p + "attention.output.dense")), p + "attention.output.LayerNorm", eps)
    h = g.dense(x, p + "intermediate.dense")
    root2 = g.const("sqrt2", np.array(math.sqrt(2.0), dtype=np.float32))
    one, half = g.const("one", np.array(1.0, dtype=np.float32)), g.const("half", np.array(0.5, dtype=np.float32))
    h = g.op("Mul", g.op("Mul", h, half), g.op("Add", g.op("Erf", g.op("Div", h, root2)), one))
    return g.layer_norm(g.op("Add", x, g.dense(h, p + "output.dense")), p + "output.LayerNorm", eps)


def _embeddings(g: _Graph, eps: float) -> str:
    """Word, position and token-type embeddings, summed and normalised: ``[batch, length, hidden]``."""
    length = g.op("Gather", g.op("Shape", "input_ids"), g.const("one_i", np.array(1, np.int64)))
    positions = g.op("Range", g.const("zero_i", np.array(0, np.int64)), length, "one_i")
    x = g.op("Gather", g.weight("embeddings.word_embeddings.weight"), "input_ids")
    x = g.op("Add", x, g.op("Gather", g.weight("embeddings.position_embeddings.weight"), positions))
    x = g.op("Add", x, g.op("Gather", g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"))
    return g.layer_norm(x, "embeddings.LayerNorm", eps)


def _pooled(g: _Graph, x: str, mask: str) -> str:
    """The mean of ``x`` over the unmasked tokens, scaled to unit length: ``[batch, hidden]``."""
    axis1 = g.const("axes1", np.array([1], np.int64))
    masked = g.op("Mul", x, g.op("Unsqueeze", mask, g.const("axes2", np.array([2], np.int64))))
    count = g.op("Max", g.op("ReduceSum", mask, axis1, keepdims=1), g.const("tiny", np.array(1e-9, np.float32)))
    pooled = g.op("Div", g.op("ReduceSum", masked, axis1, keepdims=0), count)
    norm = g.op("ReduceL2", pooled, axes=[-1], keepdims=1)
    return g.op("Div", pooled, g.op("Max", norm, g.const("tiny_norm", np.array(1e-12, np.float32))))


def bert_graph(weights: dict[str, Array], config: dict[str, Any]) -> Any:
    """An ``onnx.ModelProto``: ``(input_ids, attention_mask, token_type_ids)`` int64 ``[batch,
    length]`` to unit-length mean-pooled embeddings float32 ``[batch, hidden]``."""
    from onnx import TensorProto, helper

    g, eps = _Graph(weights), float(config.get("layer_norm_eps", 1e-12))
    x = _embeddings(g, eps)
    mask = g.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    padding = g.op("Sub", g.const("one", np.array(1.0, np.float32)), mask)
    bias = g.op("Mul", padding, g.const("big", np.array(-1e9, np.float32)))  # a padded key scores -1e9
    bias = g.op("Unsqueeze", bias, g.const("axes12", np.array([1, 2], np.int64)))  # [batch, 1, 1, length]
    for layer in range(int(config["num_hidden_layers"])):
        x = _block(g, x, bias, f"encoder.layer.{layer}.", config, eps)
    g.nodes.append(helper.make_node("Identity", [_pooled(g, x, mask)], ["embedding"]))
    names = ("input_ids", "attention_mask", "token_type_ids")
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "length"]) for n in names]
    out = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", int(config["hidden_size"])])
    graph = helper.make_graph(g.nodes, "minilm", inputs, [out], list(g.inits.values()))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="toolsift")
    model.ir_version = IR_VERSION  # what opset 17 needs, so that older onnxruntime builds load it too
    return model


def _session(data: bytes, threads: int) -> Any:
    """An onnxruntime session whose threads sleep instead of spinning between operations: on a
    busy 2-core machine, spinning threads made a query 5-10 times slower (``benches/RESULTS.md``)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def _int8(data: bytes) -> bytes:
    """The model with int8 weights in its matrix products, one scale per output column: query
    vectors at cosine 0.994 on average to float32 on BFCL, against 0.968 with one scale per
    matrix (``benches/RESULTS.md``)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "fp32.onnx", Path(tmp) / "int8.onnx"
        src.write_bytes(data)
        quantize_dynamic(src, dst, weight_type=QuantType.QInt8, op_types_to_quantize=["MatMul"], per_channel=True)
        return dst.read_bytes()


class OnnxMiniLM:
    """Sentence embeddings from a BERT-style sentence-transformers folder, run with onnxruntime.

    Args:
        folder: Path holding ``config.json``, ``model.safetensors`` and ``tokenizer.json``.
        max_tokens: Inputs are truncated to this many word pieces.
        batch_tokens: A batch holds at most this many tokens, padding included (texts of similar
            length go together).
        threads: onnxruntime's threads (0: one per core).
        int8_queries: :meth:`embed_query` runs int8 matrix weights (dynamic quantisation), each
            text alone; :meth:`embed`, which embeds the tools, stays float32.
    """

    def __init__(
        self,
        folder: str | Path,
        *,
        max_tokens: int = 256,
        batch_tokens: int = 2048,
        threads: int = 0,
        int8_queries: bool = False,
    ) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        folder = Path(folder)
        self.config = json.loads((folder / "config.json").read_text())
        raw = load_file(str(folder / "model.safetensors"))
        weights = {k.removeprefix("bert."): v.astype(np.float32) for k, v in raw.items()}
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_tokens)
        self.tokenizer.no_padding()
        self.batch_tokens = batch_tokens
        data = bert_graph(weights, self.config).SerializeToString()
        threads = threads or os.cpu_count() or 1
        self.session = _session(data, threads)
        # int8 activations are scaled per run, so a batched text's vector would depend on its
        # neighbours (cosine down to 0.98 on BFCL): each query runs alone
        self.query_session = _session(_int8(data), threads) if int8_queries else self.session
        self.name = folder.name + (" int8 queries" if int8_queries else "")

    @property
    def dim(self) -> int:
        """Embedding size."""
        return int(self.config["hidden_size"])

    def embed(self, texts: list[str]) -> Array:
        """Unit-length embeddings, one row per text, float32 (batched by token count)."""
        return self._run(self.session, texts, self.batch_tokens)

    def embed_query(self, texts: list[str]) -> Array:
        """As :meth:`embed`, each text alone, through the int8 session when there is one."""
        return self._run(self.query_session, texts, 1 if self.query_session is not self.session else self.batch_tokens)

    def _run(self, session: Any, texts: list[str], batch_tokens: int) -> Array:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encoded = [e.ids for e in self.tokenizer.encode_batch(texts)] if texts else []
        for batch in _batches(encoded, batch_tokens):
            longest = max(len(encoded[i]) for i in batch)
            ids = np.zeros((len(batch), longest), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(batch):
                ids[row, : len(encoded[i])], mask[row, : len(encoded[i])] = encoded[i], 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[batch] = session.run(["embedding"], feeds)[0]
        return out


def _batches(encoded: list[list[int]], batch_tokens: int) -> list[list[int]]:
    """Positions of the texts grouped by token count, shortest first, each group holding at most
    ``batch_tokens`` tokens with its padding (one text at least)."""
    order = sorted(range(len(encoded)), key=lambda i: (len(encoded[i]), i))
    batches: list[list[int]] = []
    for i in order:
        if batches and (len(batches[-1]) + 1) * len(encoded[i]) <= batch_tokens:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches
