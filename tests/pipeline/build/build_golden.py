"""What a build stored, as plain numbers to compare across code versions (test_build_memory.py): the served and
candidate routers' Psi, their clusterings, the chosen kind and its Areas, and every prompt's stored cluster.

`python -m tests.pipeline.build.build_golden` rewrites tests/pipeline/data/build_golden.json from the code it runs (it
was recorded from the build that held every vector and the whole score matrix in the driver)."""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from tests.helpers import ingest
from tests.synthetic_logs import synthetic_long
from uniroute import store
from uniroute.pipeline.build import nightly as build_module
from uniroute.pipeline.pool import registry

GOLDEN = Path(__file__).parent / "data" / "build_golden.json"
KINDS = ("kmeans", "kmeans_shrunk", "knn")
# Sample sizes that make the build sample (a refit, Psi over every validation prompt) on 600 prompts; None: none.
SAMPLED = {"TUNING_SAMPLE": 100, "TUNING_VAL_SAMPLE": 40, "EVAL_TEST_SAMPLE": 50}


def logs() -> pd.DataFrame:
    """600 prompts x 5 models; one model answered only a third of the prompts (it is left out of some roles)."""
    frame = synthetic_long(n_prompts=600, n_models=5, seed=2)
    sparse = (frame.model == "model-2") & (frame.prompt_id.str[1:].astype(int) % 3 != 0)
    return frame[~sparse].reset_index(drop=True)


def _clustering_names(assignments: pd.DataFrame) -> dict[str, str]:
    """Each stored clustering named by what it assigns (every prompt's cluster), not by its id: the id hashes the
    centres' float32 bits, whose last bits differ between CPUs (AVX2 and AVX-512 sum in another order) while the
    clusters, Psi and Areas agree."""
    return {cid: "clusters-" + hashlib.sha256(rows.sort_values("prompt_id")[["prompt_id", "cluster"]]
                                             .to_csv(index=False).encode()).hexdigest()[:16]
            for cid, rows in assignments.groupby("clustering_id")}


def observe(db: Path, result: build_module.BuildResult) -> dict:
    """The build's stored outcome as JSON-able numbers."""
    with store.opened(db, read_only=True) as con:
        assignments = con.execute("select clustering_id, prompt_id, cluster from cluster_assignments").df()
        stored = _clustering_names(assignments)
        names = dict(stored)
        ids = [c["candidate_router_id"] for c in result.candidates]
        routers = {}
        for router_id in ids:
            version = registry.load_router_version(con, router_id)
            psi = registry.psi_table(version.router)
            clustering = registry.router_clustering_id(version.router)
            if clustering not in names and (centroids := registry.router_centroids(version.router)) is not None:
                # A clustering no prompt was stored under (the sampled build's refit) is named by its size: its
                # centres' digits differ between CPUs (even rounded to 6 decimals, seen on an AVX-512 machine),
                # and what it assigns is checked through its Psi rows (each cluster's n and loss) below.
                names[clustering] = f"unstored-k{len(centroids.centers)}"
            routers[version.kind] = {
                "clustering_id": names.get(clustering, clustering),
                "models": list(version.router.models),
                "psi": psi[["model", "cluster", "loss", "n", "routing_loss"]].round(12).to_dict("list"),
            }
    digest = hashlib.sha256(json.dumps(sorted(stored.values())).encode()).hexdigest()
    return {"kind": result.kind, "k": result.k, "val_area": result.val_area, "models": list(result.models),
            "roles": result.roles, "n_prompts": result.n_prompts,
            "metrics": {m: {k: round(v, 12) for k, v in vals.items()} for m, vals in result.metrics.items()},
            "candidates": [{k: c[k] for k in ("kind", "value", "val_area")} for c in result.candidates],
            "routers": routers, "assignments_rows": len(assignments), "assignments_sha256": digest}


def built(folder: Path, sampled: bool, client: object = None) -> dict:
    """Ingest logs() into a new store under folder, build (sampling as SAMPLED says), observe it."""
    folder.mkdir(parents=True, exist_ok=True)
    logs().to_parquet(folder / "logs.parquet", index=False)
    db = folder / "uniroute.duckdb"
    ingest(db, folder / "logs.parquet", progress=False)
    saved = {name: getattr(build_module, name) for name in SAMPLED}
    try:
        if sampled:
            for name, value in SAMPLED.items():
                setattr(build_module, name, value)
        with store.opened(db) as con:
            result = build_module.run_build(con, "tfidf", seed=0, kinds=KINDS, client=client)
    finally:
        for name, value in saved.items():
            setattr(build_module, name, value)
    return observe(db, result)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        golden = {name: built(Path(tmp) / name, name == "sampled") for name in ("whole", "sampled")}
    GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
