"""Prompt embeddings: one module per embedder, and the cache that makes each text cost one encode, ever.

Owns the embedders (`minilm`; `minilm-onnx` and `static`, whose model files are built once from the local MiniLM
into a cache folder by `artifacts`; `tfidf`. Each returns (n, dim) float32 unit rows and an `embedder_id` naming
everything that changes the vectors; `kinds` describes each by name), batching on Dask workers (`batches`) and
the embedding cache (`cache`: Parquet partitions the workers write, keyed by (sha256(text), embedder_id)).
`attributes` is the prompt-attribute embedder (heads distilled on a frozen embedder); `annotator` asks an
OpenAI-compatible endpoint for the attribute labels and caches the answers. It knows nothing of clusters, routers
or LLM results.
"""

from typing import TYPE_CHECKING

from uniroute.lazy import lazy_attributes

if TYPE_CHECKING:  # the names as mypy and readers see them
    from uniroute.embed.base import MINILM_DIM, Embedder, text_hash
    from uniroute.embed.batches import TASK_TEXTS, embed_batches, text_batches
    from uniroute.embed.cache import CHUNK_TEXTS, embed_cached, embed_missing
    from uniroute.embed.factory import make_embedder
    from uniroute.embed.kinds import (
        BUILT_EMBEDDERS,
        EMBEDDER_KINDS,
        EMBEDDERS,
        EmbedderError,
        EmbedderKind,
        build_embedder_kind,
        embedder_kind,
    )
    from uniroute.embed.minilm import MINILM_MAX_TOKENS, MiniLMEmbedder, load_minilm, minilm_path, minilm_version
    from uniroute.embed.minilm_onnx import MiniLMOnnxEmbedder, load_minilm_onnx
    from uniroute.embed.portable import embedder_from_state, embedder_state, restored_embedder
    from uniroute.embed.static import StaticEmbedder, load_static
    from uniroute.embed.static_tuned import StaticTunedEmbedder, fit_static_tuned
    from uniroute.embed.tfidf import TfidfEmbedder, fit_tfidf, tfidf_from_bytes, tfidf_to_bytes

# Each name is imported from its module on first use (PEP 562): `uniroute route` needs the static embedder and
# the restored-file reader only, not the cache's store, Parquet or DuckDB that `embed_cached` brings.
_MODULE_OF = {
    "MINILM_DIM": "uniroute.embed.base",
    "Embedder": "uniroute.embed.base",
    "text_hash": "uniroute.embed.base",
    "TASK_TEXTS": "uniroute.embed.batches",
    "embed_batches": "uniroute.embed.batches",
    "text_batches": "uniroute.embed.batches",
    "CHUNK_TEXTS": "uniroute.embed.cache",
    "embed_cached": "uniroute.embed.cache",
    "embed_missing": "uniroute.embed.cache",
    "make_embedder": "uniroute.embed.factory",
    "BUILT_EMBEDDERS": "uniroute.embed.kinds",
    "EMBEDDER_KINDS": "uniroute.embed.kinds",
    "EMBEDDERS": "uniroute.embed.kinds",
    "EmbedderError": "uniroute.embed.kinds",
    "EmbedderKind": "uniroute.embed.kinds",
    "build_embedder_kind": "uniroute.embed.kinds",
    "embedder_kind": "uniroute.embed.kinds",
    "MINILM_MAX_TOKENS": "uniroute.embed.minilm",
    "MiniLMEmbedder": "uniroute.embed.minilm",
    "load_minilm": "uniroute.embed.minilm",
    "minilm_path": "uniroute.embed.minilm",
    "minilm_version": "uniroute.embed.minilm",
    "MiniLMOnnxEmbedder": "uniroute.embed.minilm_onnx",
    "load_minilm_onnx": "uniroute.embed.minilm_onnx",
    "embedder_from_state": "uniroute.embed.portable",
    "embedder_state": "uniroute.embed.portable",
    "restored_embedder": "uniroute.embed.portable",
    "StaticEmbedder": "uniroute.embed.static",
    "load_static": "uniroute.embed.static",
    "StaticTunedEmbedder": "uniroute.embed.static_tuned",
    "fit_static_tuned": "uniroute.embed.static_tuned",
    "TfidfEmbedder": "uniroute.embed.tfidf",
    "fit_tfidf": "uniroute.embed.tfidf",
    "tfidf_from_bytes": "uniroute.embed.tfidf",
    "tfidf_to_bytes": "uniroute.embed.tfidf",
}


__all__ = [
    "BUILT_EMBEDDERS",
    "CHUNK_TEXTS",
    "EMBEDDER_KINDS",
    "EMBEDDERS",
    "MINILM_DIM",
    "MINILM_MAX_TOKENS",
    "TASK_TEXTS",
    "Embedder",
    "EmbedderError",
    "EmbedderKind",
    "MiniLMEmbedder",
    "MiniLMOnnxEmbedder",
    "StaticEmbedder",
    "StaticTunedEmbedder",
    "TfidfEmbedder",
    "build_embedder_kind",
    "embed_batches",
    "embed_cached",
    "embed_missing",
    "embedder_from_state",
    "restored_embedder",
    "embedder_kind",
    "embedder_state",
    "fit_static_tuned",
    "fit_tfidf",
    "load_minilm",
    "load_minilm_onnx",
    "load_static",
    "make_embedder",
    "minilm_path",
    "minilm_version",
    "text_batches",
    "text_hash",
    "tfidf_from_bytes",
    "tfidf_to_bytes",
]


__getattr__ = lazy_attributes(globals(), _MODULE_OF)
