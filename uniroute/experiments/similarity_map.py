"""The LLM-similarity map (paper: the visualisation of LLM embeddings) as a PNG and JSON, from a log or a router."""

from __future__ import annotations

import json
import logging
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

from uniroute.routers.cluster.kmeans import fit_centroids
from uniroute.routers.cluster.psi import Psi, psi_from_losses
from uniroute.routers.cluster.similarity import Similarity
from uniroute.selection.data import EvalData

log = logging.getLogger(__name__)


def log_psi(data: EvalData, X: np.ndarray, k: int, seed: int = 0) -> Psi:
    """Every LLM's Psi on a log: K-means (K = k) over all its prompts' embeddings X (N, d), mean loss per cluster."""

    if not 1 <= k <= data.routing.n_prompts:
        raise ValueError(f"K must lie in [1, {data.routing.n_prompts}], got {k}")
    centroids = fit_centroids(X, k, seed=seed)
    return psi_from_losses(centroids.assign(X), 1.0 - data.routing.scores, k, data.routing.models)


def similarity_json(similarity: Similarity, **about: Any) -> dict[str, Any]:
    """The map's numbers: models in display order, the cosine matrix, the near-duplicate pairs."""
    return {
        **about,
        "models": list(similarity.models),
        "cosine": np.round(similarity.cosine, 6).tolist(),
        "mean_abs_difference": np.round(similarity.mean_abs_difference, 6).tolist(),
        "near_duplicates": similarity.near_duplicates(),
        "z": np.round(similarity.z, 4).tolist(),
        "chi2": np.round(similarity.chi2, 4).tolist(),
        "chi2_limit": round(similarity.chi2_limit, 4),
        "cosine_of": "Psi rows centred on each cluster's pool mean",
        "order": "average-linkage hierarchical clustering on 1 - cosine, leaves in optimal order",
    }


def near_duplicate_lines(similarity: Similarity) -> list[str]:
    """One line per near-duplicate pair, for a terminal."""
    return [
        f"near duplicates: {p['model_a']} and {p['model_b']} (overall difference {p['z']:+.2f} standard errors, "
        f"per-cluster chi-square {p['chi2']:.1f} within {similarity.chi2_limit:.1f}: no more than sampling gives)"
        for p in similarity.near_duplicates()
    ]


def write_similarity_map(similarity: Similarity, path: Path, title: str) -> None:
    """Heatmap of the cosine similarity in display order; near-duplicate pairs are outlined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    m = len(similarity.models)
    size = max(5.0, 0.28 * m + 2.5)
    fig, ax = plt.subplots(figsize=(size + 1.2, size))
    off_diagonal = similarity.cosine[~np.eye(m, dtype=bool)]
    image = ax.imshow(similarity.cosine, cmap="viridis", vmin=float(off_diagonal.min()), vmax=1.0)
    ax.set_xticks(range(m))
    ax.set_yticks(range(m))
    ax.set_xticklabels(similarity.models, rotation=90, fontsize=7)
    ax.set_yticklabels(similarity.models, fontsize=7)
    index = {name: i for i, name in enumerate(similarity.models)}
    for pair in similarity.near_duplicates():
        i, j = index[str(pair["model_a"])], index[str(pair["model_b"])]
        for r, c in ((i, j), (j, i)):
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=1.5))
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="cosine similarity of centred Psi rows")
    # Wrapped to the figure's width and saved with a tight box: a long log or router name used to be cut off.
    lines = textwrap.wrap(title, width=max(30, int(9 * size))) + (
        ["red: near duplicates (differ no more than sampling would)"] if similarity.near_duplicates() else [])
    ax.set_title("\n".join(lines), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130, bbox_inches="tight")
    plt.close(fig)


def write_similarity_outputs(similarity: Similarity, png: Path, title: str, **about: Any) -> list[Path]:
    """The PNG and a JSON of its numbers beside it."""
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    write_similarity_map(similarity, png, title)
    out = png.with_suffix(".json")
    out.write_text(json.dumps(similarity_json(similarity, title=title, **about), indent=1) + "\n")
    return [png, out]
