"""An embedder's state as bytes, so a router embeds exactly as it was fitted wherever it runs.

A router is tied to one embedder id. MiniLM is rebuilt from the installed package alone, but a TF-IDF embedder
and a tuned static table (`static-tuned`) are fitted on a build's prompts, and the static and ONNX embedders are
files built once into a cache folder (a static table rebuilt on another machine need not be bit-identical). Their
state travels with every router built on them: in the store (`fitted_embedders`), in published snapshots and in
MLflow models. The bytes are npz of plain arrays (no pickle); a restored model file is written under its
fingerprint into a folder the caller gives, so restoring twice reuses it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from uniroute.embed.minilm_onnx import MiniLMOnnxEmbedder
from uniroute.embed.static import StaticEmbedder
from uniroute.embed.static_tuned import STATE_FORMAT as STATIC_TUNED_FORMAT
from uniroute.embed.static_tuned import StaticTunedEmbedder, static_tuned_from_bytes, static_tuned_to_bytes
from uniroute.embed.tfidf import STATE_FORMAT as TFIDF_FORMAT
from uniroute.embed.tfidf import TfidfEmbedder, tfidf_from_bytes, tfidf_to_bytes

FORMAT = "uniroute-embedder-file"
# Where restored model files go when the caller has no cache folder: content-addressed, shared by processes.
DEFAULT_FOLDER = Path(tempfile.gettempdir()) / "uniroute-embedders"


def embedder_state(embedder: Any) -> bytes | None:
    """The bytes that rebuild this embedder exactly, or None when it is rebuilt from the installed package."""
    if isinstance(embedder, TfidfEmbedder):
        return tfidf_to_bytes(embedder)
    if isinstance(embedder, StaticTunedEmbedder):
        return static_tuned_to_bytes(embedder)
    if isinstance(embedder, StaticEmbedder):
        fields = {"kind": "static", "pca_dims": embedder.pca_dims, "sif_coefficient": embedder.sif_coefficient,
                  "max_tokens": embedder.max_tokens, "dim": embedder.dim}
        return _file_state(embedder.table_file, embedder.fingerprint, fields)
    if isinstance(embedder, MiniLMOnnxEmbedder):
        fields = {"kind": "minilm-onnx", "quantization": embedder.quantization, "batch_size": embedder.batch_size,
                  "per_prompt": embedder.per_prompt}
        return _file_state(embedder.model_file, embedder.fingerprint, fields)
    return None


def _file_state(path: str, fingerprint: str, fields: dict[str, Any]) -> bytes:
    header = {"format": FORMAT, "version": 1, "fingerprint": fingerprint, "suffix": Path(path).suffix, **fields}
    buffer = io.BytesIO()
    # Not `file=`: that is np.savez's own first parameter, so the array would clash with it (TypeError).
    np.savez(buffer, header=np.array(json.dumps(header)),
             content=np.frombuffer(Path(path).read_bytes(), dtype=np.uint8))
    return buffer.getvalue()


def _restored_file(content: np.ndarray, name: str, folder: Path) -> str:
    """The model file written once under folder (atomically: a temporary name, then a rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if not path.exists():
        _write_atomically(path, content.tobytes())
    return str(path)


def _pointer(folder: Path, embedder_id: str) -> Path:
    """Where the header of the model file restored for embedder_id is kept (the id names the file's fingerprint)."""
    return folder / "restored" / f"{hashlib.sha256(embedder_id.encode()).hexdigest()[:24]}.json"


def restored_embedder(embedder_id: str, folder: Path | None = None, progress: bool = False) -> Any | None:
    """The embedder of embedder_id when its model file was restored under folder before (by embedder_from_state),
    built from that file without the stored state; None otherwise. A one-prompt `uniroute route` then never
    fetches and unpacks the tens of megabytes of state from the store (most of its time, once)."""
    folder = Path(folder) if folder is not None else DEFAULT_FOLDER
    try:
        header = json.loads(_pointer(folder, embedder_id).read_text())
        path = folder / "restored" / f"{header['kind']}-{header['fingerprint']}{header['suffix']}"
        if not path.is_file():
            return None
        embedder = _from_header(header, str(path), progress)
    except (OSError, ValueError, KeyError, TypeError):  # no pointer, or one unreadable: the state restores it
        return None
    return embedder if embedder.embedder_id == embedder_id else None


def embedder_from_state(data: bytes, folder: Path | None = None, progress: bool = False) -> Any:
    """The embedder saved by embedder_state; a model file is written once under folder (default: DEFAULT_FOLDER),
    with a pointer from its embedder id (restored_embedder)."""
    with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as saved:
        header = json.loads(str(saved["header"]))
        if header.get("format") == TFIDF_FORMAT:
            return tfidf_from_bytes(data, progress=progress)
        if header.get("format") == STATIC_TUNED_FORMAT:
            return static_tuned_from_bytes(data, progress=progress)
        if header.get("format") != FORMAT:
            raise ValueError(f"not a saved embedder (format {header.get('format')!r})")
        folder = Path(folder) if folder is not None else DEFAULT_FOLDER
        name = f"{header['kind']}-{header['fingerprint']}{header['suffix']}"
        restored = folder / "restored" / name
        # The content is unpacked only when the file is missing: reading it is most of a restore.
        path = str(restored) if restored.is_file() else _restored_file(saved["content"], name, folder / "restored")
    embedder = _from_header(header, path, progress)
    pointer = _pointer(folder, embedder.embedder_id)
    if not pointer.is_file():
        # A read-only cache that holds the file already: only the shortcut is lost.
        with contextlib.suppress(OSError):
            _write_atomically(pointer, json.dumps(header).encode())
    return embedder


def _write_atomically(path: Path, content: bytes) -> None:
    handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(handle, "wb") as out:
        out.write(content)
    os.replace(tmp, path)


def _from_header(header: dict[str, Any], path: str, progress: bool) -> Any:
    if header["kind"] == "static":
        return StaticEmbedder(path, header["fingerprint"], dim=header["dim"], pca_dims=header["pca_dims"],
                              sif_coefficient=header["sif_coefficient"], max_tokens=header["max_tokens"],
                              progress=progress)
    if header["kind"] == "minilm-onnx":
        # A state saved before prompts ran alone has no per_prompt: it keeps its padded batches (and its id).
        return MiniLMOnnxEmbedder(path, header["fingerprint"], header["quantization"],
                                  batch_size=header["batch_size"], per_prompt=header.get("per_prompt", False),
                                  progress=progress)
    raise ValueError(f"a saved embedder of unknown kind {header['kind']!r}")
