"""all-MiniLM-L6-v2 on ONNX Runtime: exported once from the local weights, int8-quantized per channel, no torch
at encode time; one prompt per run, so a prompt's vector never depends on the batch it came in."""

from __future__ import annotations

import functools
import logging
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from uniroute.embed.artifacts import built_artifact
from uniroute.embed.base import MINILM_DIM, check_texts, unit_rows
from uniroute.embed.minilm import MINILM_MAX_TOKENS, minilm_path, minilm_version
from uniroute.embed.tokens import padded_ids, wordpiece_tokenizer

if TYPE_CHECKING:
    from onnxruntime import InferenceSession

log = logging.getLogger(__name__)

# "int8-per-channel": dynamic quantization, int8 weights with one scale per output channel, activations
# quantized per batch at run time. Per-tensor scales lose much more (cosine to MiniLM about 0.94 against
# 0.99, benchmarks/speed/embedding.py), so they are not offered. "none": the float32 graph (identical vectors).
QUANTIZATIONS = ("int8-per-channel", "none")
ONNX_OPSET = 17
MODEL_FILE = "model.onnx"
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def _onnx_recipe(quantization: str) -> dict[str, object]:
    """Everything that decides the built file (library versions read from metadata: no torch import)."""
    return {
        "source": f"all-MiniLM-L6-v2@{minilm_version()}",
        "pooling": "mean",
        "quantization": quantization,
        "opset": ONNX_OPSET,
        "torch": version("torch"),
        "transformers": version("transformers"),
        "onnxruntime": version("onnxruntime"),
    }


class _DropQuantizerAdvice(logging.Filter):
    """onnxruntime's quantizer logs advice on the root logger at WARNING; it is not a problem here."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


def export_minilm_onnx(folder: Path, quantization: str) -> None:
    """Write MODEL_FILE into folder: MiniLM plus mean pooling as one ONNX graph, quantized as asked.

    The graph takes (batch, tokens) int64 input_ids, attention_mask and token_type_ids and returns the
    (batch, 384) float32 masked mean of the last hidden states: sentence-transformers' Transformer and
    Pooling modules (normalisation happens in numpy). Exported by torch's TorchScript tracer, on CPU.
    """
    import torch
    from transformers import AutoModel

    class MeanPooled(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    token_type_ids: torch.Tensor) -> torch.Tensor:
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=token_type_ids).last_hidden_state  # (batch, tokens, 384)
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)

    bert = AutoModel.from_pretrained(str(minilm_path()), attn_implementation="eager").eval()
    # A padded example, so the traced graph takes the masked path for every later batch.
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.long)
    example = (ids, (ids != 0).long(), torch.zeros_like(ids))
    float_file = folder / ("float.onnx" if quantization != "none" else MODEL_FILE)
    axes = {name: {0: "batch", 1: "tokens"} for name in INPUTS}
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")  # tracer warnings about shape-dependent Python branches (checked below)
        torch.onnx.export(MeanPooled(bert), example, str(float_file), dynamo=False, input_names=list(INPUTS),
                          output_names=["sentence_embedding"],
                          dynamic_axes={**axes, "sentence_embedding": {0: "batch"}}, opset_version=ONNX_OPSET)
    if quantization == "int8-per-channel":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        advice = _DropQuantizerAdvice()
        logging.getLogger().addFilter(advice)
        try:
            quantize_dynamic(str(float_file), str(folder / MODEL_FILE), per_channel=True, weight_type=QuantType.QInt8)
        finally:
            logging.getLogger().removeFilter(advice)
        float_file.unlink()
    elif quantization != "none":
        raise ValueError(f"unknown quantization {quantization!r}; known: {', '.join(QUANTIZATIONS)}")


@functools.lru_cache(maxsize=4)
def _session(model_file: str, threads: int) -> InferenceSession:
    """The ONNX Runtime session, once per process (a pickled embedder re-opens it on each Dask worker)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads  # 0: ONNX Runtime's default, one per physical core
    options.inter_op_num_threads = 1
    # Idle threads sleep instead of spinning: the cores are shared with Dask workers and other jobs.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    return ort.InferenceSession(model_file, options, providers=["CPUExecutionProvider"])


@dataclass(frozen=True)
class MiniLMOnnxEmbedder:
    """all-MiniLM-L6-v2 from a built ONNX file; picklable (the session is opened per process on first use)."""

    model_file: str
    fingerprint: str  # of the built file: a rebuilt, different file gets a different id
    quantization: str = "int8-per-channel"
    batch_size: int = 32  # only when per_prompt is False
    # True: each prompt runs through the graph alone (no padding, its own activation scales), so its vector is
    # the same bits alone, in any batch, on any worker and at any thread count. Dynamic int8 quantization sets
    # one activation scale per run, so in a padded batch a prompt's vector moved with its batch-mates (up to 0.05
    # in a coordinate, cosine 0.988, on 200 RouterBench prompts), and the cache kept whichever came first. Alone
    # costs no speed: 21.9 s against 26.2 s in padded batches of 32 on those prompts (benchmarks/speed/one_vector.py,
    # 2 shared cores). False: the padded, length-sorted batches of routers built before, kept so that their stored
    # embedder still gives the vectors they were fitted on.
    per_prompt: bool = True
    threads: int = 0
    progress: bool = True
    dim: int = MINILM_DIM
    embedder_id: str = field(init=False)

    def __post_init__(self) -> None:
        if self.quantization not in QUANTIZATIONS:
            raise ValueError(f"unknown quantization {self.quantization!r}; known: {', '.join(QUANTIZATIONS)}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        precision = "f32" if self.quantization == "none" else "int8pc"
        # Vectors encoded alone differ from padded-batch ones: another id, so the cache never mixes the two.
        runs = ":alone" if self.per_prompt else ""
        ident = (f"minilm-onnx:all-MiniLM-L6-v2@{minilm_version()}:left{MINILM_MAX_TOKENS}:{precision}{runs}"
                 f":d{self.dim}:{self.fingerprint}")
        object.__setattr__(self, "embedder_id", ident)

    def session(self) -> InferenceSession:
        """The ONNX Runtime session (cached per process)."""
        return _session(self.model_file, self.threads)

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """(n, 384) float32 unit vectors of the texts (left-truncated to 256 tokens, as `minilm`)."""
        texts = check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)  # (n, 384)
        if not texts:
            return out
        encodings = wordpiece_tokenizer(str(minilm_path()), MINILM_MAX_TOKENS).encode_batch(texts)
        session = self.session()
        if self.per_prompt:
            for row, encoding in enumerate(encodings):
                ids = np.asarray([encoding.ids], dtype=np.int64)  # (1, tokens): no padding
                feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
                out[row] = session.run(None, feed)[0][0]
            return unit_rows(out)
        # Batches of similar lengths waste little on padding (sentence-transformers sorts the same way).
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        for lo in range(0, len(texts), self.batch_size):
            rows = order[lo : lo + self.batch_size]
            ids, mask = padded_ids([encodings[i] for i in rows])
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            out[rows] = session.run(None, feed)[0]
        return unit_rows(out)


def load_minilm_onnx(
    cache_dir: Path, quantization: str = "int8-per-channel", batch_size: int = 32, threads: int = 0,
    progress: bool = True,
) -> MiniLMOnnxEmbedder:
    """The ONNX MiniLM embedder, exporting its model file into cache_dir the first time (about 10 s)."""
    if quantization not in QUANTIZATIONS:
        raise ValueError(f"unknown quantization {quantization!r}; known: {', '.join(QUANTIZATIONS)}")
    artifact = built_artifact(cache_dir, f"minilm-onnx-{quantization}", _onnx_recipe(quantization),
                              functools.partial(export_minilm_onnx, quantization=quantization))
    embedder = MiniLMOnnxEmbedder(str(artifact.path / MODEL_FILE), artifact.fingerprint, quantization,
                                  batch_size=batch_size, threads=threads, progress=progress)
    embedder.session()
    return embedder
