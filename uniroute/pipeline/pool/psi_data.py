"""Psi's evidence read from the store: the SQL group-bys behind each model's per-cluster loss and battles.

The routers compute Psi from frames (numpy in, numpy out) and never touch the store; this room runs the named
queries with the prompts' clusters registered as a relation and hands them the frames. Frames: psi_by_cluster
has columns model, cluster, loss_sum, n (routers.cluster.psi.PSI_FRAME_COLUMNS); battles_by_cluster has columns
cluster, model_a, model_b, n, w (routers.cluster.psi_battles.BATTLE_FRAME_COLUMNS).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.routers.cluster import psi_battles
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.cluster.psi import Psi, psi_from_frame
from uniroute.routers.router import Router

PROMPT_CLUSTER_COLUMNS = ("prompt_id", "cluster")


def _clustered_query(con: store.Connection, name: str, prompt_clusters: pd.DataFrame) -> pd.DataFrame:
    """A named query run with prompt_clusters (prompt_id, cluster) registered as the relation `prompt_clusters`."""
    missing = [c for c in PROMPT_CLUSTER_COLUMNS if c not in prompt_clusters.columns]
    if missing:
        raise ValueError(f"prompt_clusters lacks columns {missing} (has {list(prompt_clusters.columns)})")
    with store.registered(con, "prompt_clusters", prompt_clusters[list(PROMPT_CLUSTER_COLUMNS)]):
        return store.query(con, name)


def psi_frame(con: store.Connection, prompt_clusters: pd.DataFrame) -> pd.DataFrame:
    """Per (active model, cluster) loss sum and count of its results on the prompts in prompt_clusters."""
    return _clustered_query(con, "psi_by_cluster", prompt_clusters)


def cost_frame(con: store.Connection, prompt_clusters: pd.DataFrame) -> pd.DataFrame:
    """Per (model, cluster) cost sum and count of its costed results on the prompts in prompt_clusters."""
    return _clustered_query(con, "cost_by_cluster", prompt_clusters)


def battle_frame(con: store.Connection, prompt_clusters: pd.DataFrame) -> pd.DataFrame:
    """Per (cluster, pair of active models) battles and summed outcome on the prompts in prompt_clusters."""
    return _clustered_query(con, "battles_by_cluster", prompt_clusters)


def psi_of_active_models(con: store.Connection, prompt_clusters: pd.DataFrame, k: int) -> Psi:
    """Psi of every active model from the store's results on the prompts in prompt_clusters."""
    return psi_from_frame(psi_frame(con, prompt_clusters), k)


def val_psi(con: store.Connection, val_ids: Sequence[str],
            val_embeddings: Callable[[], np.ndarray]) -> Callable[[Centroids, int, Sequence[str]], Psi]:
    """A build's Psi over every validation prompt (routers.kinds.FullScale.val_psi): the prompts assigned with the
    given centroids here (their vectors, val_embeddings, are what the driver holds of them), the loss sums and
    counts per (model, cluster) summed by DuckDB over the results (psi_by_cluster): at 1M x 100 the validation
    prompts' scores and losses were 160 MB of the driver. Once per distinct centroids (K-means and count-aware
    K-means share the build's refit)."""
    done: dict[int, tuple[Centroids, pd.DataFrame]] = {}

    def psi(clusters: Centroids, k: int, models: Sequence[str]) -> Psi:
        if id(clusters) not in done:  # the centroids kept beside their frame: the id stays theirs
            assigned = pd.DataFrame({"prompt_id": list(val_ids), "cluster": clusters.assign(val_embeddings())})
            done[id(clusters)] = clusters, psi_frame(con, assigned)
        return psi_from_frame(done[id(clusters)][1], k, models)
    return psi


def onboard_psi(con: store.Connection, prompt_clusters: pd.DataFrame, models: Sequence[str],
                router: Router) -> Psi:
    """Psi rows of `models` on the router's frozen clusters, from their results or else their battles
    (routers.cluster.psi_battles.onboard_psi says how); models with neither are left out."""
    frame = psi_frame(con, prompt_clusters)
    # Battles are read only when some model has no results there, as before the read moved here.
    with_results = set(frame.loc[frame["model"].isin(models), "model"])
    battles = (battle_frame(con, prompt_clusters) if any(m not in with_results for m in models)
               else pd.DataFrame(columns=list(psi_battles.BATTLE_FRAME_COLUMNS)))
    return psi_battles.onboard_psi(frame, battles, models, router)
