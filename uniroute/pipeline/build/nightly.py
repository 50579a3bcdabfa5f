"""The nightly build: tune every router kind, serve the one the selection chooses on validation, evaluate, version.

Roles in the pipeline (build_data.store_split): the "training LLMs" are the models with training labels that
together label most validation prompts (the kinds' hyper-parameters and the kind served are chosen with them,
as in the paper's appendix); the "test LLMs" are the models that together label most test prompts, where the
candidate kinds are scored against ZeroRouter. Every active, costed model with validation results joins the
router (a Psi row, or a row of the K-NN label table). Which prompts are train / val / test is stored in
`prompt_splits` (from the logs, else a deterministic hash split) and never changes for a prompt.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from uniroute import store
from uniroute.embed.fill import Embedded
from uniroute.faults import crashpoint
from uniroute.pipeline.build.cells import Keep
from uniroute.pipeline.build.clusters import store_assignments
from uniroute.pipeline.build.held import HeldRows, TuningRows
from uniroute.pipeline.build.matrices import (
    embed_prompts,
    load_store_index,
    store_split,
)
from uniroute.pipeline.build.memory import release_freed
from uniroute.pipeline.build.refits import Refits
from uniroute.pipeline.build.result import BuildResult, tiny_table_note
from uniroute.pipeline.build.tuned_kinds import BuildPool, BuildRows, Candidates, checked_kinds, fit_candidates
from uniroute.pipeline.pool import psi_data, registry
from uniroute.pipeline.pool.battles import with_battle_models
from uniroute.pipeline.pool.evidence import MIN_VAL_ANSWERS, thin_among
from uniroute.pipeline.traffic.shadow_config import ShadowConfig
from uniroute.pipeline.traffic.shadow_gate import record_gate, shadow_gate
from uniroute.progress import ticking
from uniroute.routers.kinds import Tuned, router_kind
from uniroute.selection.curves import curve_metrics
from uniroute.selection.split import TrialSplit
from uniroute.selection.state import TrialState

if TYPE_CHECKING:
    from distributed import Client

log = logging.getLogger(__name__)

# Above this many training prompts the kinds are tuned on a fixed subsample (an exact K-means per candidate K
# on all of them would take minutes each) and the served one-hot router's K-means is refitted on all of them
# over the embedding dataset, on the Dask workers when the build has a cluster (RouterKind.full_scale).
TUNING_SAMPLE = 50_000
# Deviation from the paper's protocol at scale: above these sizes K (and K-NN's k) is chosen on a fixed random
# subsample of the validation prompts and the build is scored on a subsample of the test prompts. The paper's
# grids grow with the validation set (K up to n_val / 50, k up to n_val / 3): at 1M prompts (100k val, 300k
# test) tuning would fit K-means up to K = 2,000 and hold a 100k x 33k neighbour table (27 GB), and the K-NN
# test curve a 300k x 100k similarity matrix (120 GB). A cluster router's Psi still uses every validation
# prompt; a K-NN router's references are the sampled validation prompts (its k was chosen for that many).
TUNING_VAL_SAMPLE = 5_000
EVAL_TEST_SAMPLE = 20_000
# DuckDB's memory during a build: with its default (80% of RAM) the build's queries over 100M results held 9 GB
# of buffered blocks; capped at 1 GB they took about as long (within this shared machine's noise) and the load
# stage peaked at 3.4 GB (benchmarks/results/pipeline.json, `synthetic`). Now that the driver holds only the sampled
# rows, DuckDB's cap is most of its memory: 512 MB (each query over 20M results ran at ~600 MB of RSS with it).
BUILD_DUCKDB_MEMORY = "512MB"
FIT_DUCKDB_MEMORY = "128MB"  # after the loading: see _run_build


def _subsample(rng: np.random.Generator, rows: np.ndarray, size: int) -> np.ndarray:
    """rows itself when it has at most `size` entries, else a sorted random subset of that size."""
    return rows if len(rows) <= size else np.sort(rng.choice(rows, size, replace=False))


def _tuning_rows(split: TrialSplit, n_prompts: int) -> TuningRows:
    """The sampled prompts of a large build (TUNING_SAMPLE, TUNING_VAL_SAMPLE, EVAL_TEST_SAMPLE), or all of them."""
    rng = np.random.default_rng(split.fit_seed)
    # Training prompts are drawn first: a build that only subsamples them draws what it always drew.
    train = _subsample(rng, split.train, TUNING_SAMPLE)
    val = _subsample(rng, split.val, TUNING_VAL_SAMPLE)
    test = _subsample(rng, split.test, EVAL_TEST_SAMPLE)
    if (len(train), len(val), len(test)) == (len(split.train), len(split.val), len(split.test)):
        return TuningRows(split, np.arange(n_prompts), split)
    ends = np.cumsum([len(train), len(val), len(test)])
    renumbered = TrialSplit(split.train_models, split.test_models, np.arange(ends[0]), np.arange(ends[0], ends[1]),
                            np.arange(ends[1], ends[2]), split.fit_seed)
    return TuningRows(TrialSplit(split.train_models, split.test_models, train, val, test, split.fit_seed),
                      np.concatenate([train, val, test]), renumbered)


def _keep(seed: int) -> Callable[[np.ndarray], Keep]:
    """What the build's one pass over the results keeps, from the stored split alone: the training and validation
    samples' numbers and every validation prompt's scores (the sample draws train, then val, from the split, as
    _tuning_rows does), and every test prompt's cells on disk (the test sample is drawn among the complete ones,
    known after the pass)."""
    def keep(split: np.ndarray) -> Keep:
        empty = np.zeros(0, dtype=np.int64)
        index = {name: np.nonzero(split == name)[0] for name in ("train", "val", "test")}
        sample = _tuning_rows(TrialSplit(empty, empty, index["train"], index["val"], index["test"], seed),
                              len(split)).sample
        kept = np.union1d(sample.train, sample.val)
        return Keep(scores=kept, costs=kept, spill=split == "test")
    return keep


def run_build(con: store.Connection, embedder_name: str, seed: int, cache_dir: Path | None = None,
              kinds: Sequence[str] | None = None, min_answers: int = MIN_VAL_ANSWERS,
              progress: bool = False, client: Client | None = None, shadow: ShadowConfig | None = None,
              stage: Callable[..., None] | None = None, embedded: Embedded | None = None) -> BuildResult:
    """The nightly build on what is in the store, in the caller's session: new router versions, never overwrites.

    Every candidate kind (`kinds`, default every registered kind: routers.kinds) is tuned with the training LLMs
    and the one selection.selection chooses on validation prompts becomes the build's router; the other kinds are
    stored beside it as candidates (candidate_of), and every candidate's Area in `router_candidates`. The build's
    router is served (promoted) when its validation Area is not below the champion's and the shadow gate on recent
    traffic (shadow_gate; `shadow`, default ShadowConfig()) does not refuse it. With fewer than two
    training LLMs nothing is tuned (build_candidates.untuned_default); with fewer than two test LLMs the
    held-out evaluation is skipped. client: the Dask cluster a K-means refit on every training prompt runs on
    (over the embedding dataset's partitions, build_refits: started as soon as its K is chosen); None: in this
    process. embedded: the caller's embedding fill just before (operations.build), which the build does not repeat
    if it covered exactly the build's prompts with its embedder (build_data.embed_prompts).
    """
    kinds = checked_kinds(kinds)
    # progress: the stage and the time on a terminal (a build is a minute of work that used to print nothing);
    # stage: the caller's progress line instead, when its own work goes on after this returns (operations.build)
    with contextlib.ExitStack() as stack:
        stack.enter_context(store.memory_limited(con, BUILD_DUCKDB_MEMORY))
        if stage is None:
            stage = stack.enter_context(ticking("build", log, enabled=progress))
        return _run_build(con, embedder_name, seed, cache_dir, kinds, min_answers, stage, client,
                          shadow or ShadowConfig(), embedded)


def _run_build(con: store.Connection, embedder_name: str, seed: int, cache_dir: Path | None,
               kinds: Sequence[str], min_answers: int, stage: Callable[..., None],
               client: Client | None, shadow: ShadowConfig, embedded: Embedded | None) -> BuildResult:
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    stage("loading the store")
    index = load_store_index(con, _keep(seed))
    split = store_split(index, seed)
    tuning = _tuning_rows(split, len(index.split))
    if len(tuning.rows) < len(index.split):
        sample = tuning.sample
        log.info("tuning on %d of %d training and %d of %d validation prompts, scoring on %d of %d test prompts",
                 len(sample.train), len(split.train), len(sample.val), len(split.val), len(sample.test),
                 len(split.test))
    models, excluded_models = index.models, index.excluded_models
    embedder = embed_prompts(con, embedder_name, seed, cache_dir,
                             on_stage=stage, ahead=embedded, text_hashes=index.text_hashes)
    stage("reading the sampled and validation prompts' results and vectors")
    held = HeldRows.load(con, index, tuning, split.val, embedder.embedder_id, embedder.dim)
    seconds["load_and_embed"] = time.perf_counter() - t0
    log.info("loaded %d prompts x %d models and their embeddings in %.1f s (the numbers of %d of them held)",
             len(index.prompt_ids), len(models), seconds["load_and_embed"], len(held.rows))
    crashpoint("build:embedded")
    answered = index.labelled[split.val].any(axis=0)
    # Every prompt's id, hash and answered mask (0.3 GB of the driver at 1M x 100) are not read after this: the fit
    # needs the validation prompts' ids only (their Psi), by store row.
    val_ids = {int(i): index.prompt_ids[i] for i in split.val}
    del index
    # the pass over the results' buffers and the index, before the tuning's arrays (pipeline.build.memory)
    release_freed()

    # The models' validation costs and answer counts, under the loading's cap: at 1M x 100 this query (battle
    # models included) ran out of a 96 MB cap ("failed to pin block").
    t0 = time.perf_counter()
    val_costs = store.query(con, "model_val_costs")
    costs = val_costs.set_index("model")["cost"]
    # Evidence before traffic (onboard.MIN_VAL_ANSWERS): a model with a handful of validation answers is left out
    # of the router until it has more, as onboarding leaves it out.
    thin = thin_among(val_costs, [m for j, m in enumerate(models) if answered[j]], min_answers)
    # What DuckDB keeps cached from the pass over the results is no use after it: the rest of the build's queries
    # (Psi's group-by over the validation results, the cluster assignments' insert) spill past the cap, and lowering
    # it evicts what the loading left cached (the driver's level through the tuning and the selection, its peak).
    with store.memory_limited(con, FIT_DUCKDB_MEMORY):
        state, sample = held.state(tuning, models), tuning.sample
        n_val = len(sample.val)
        pool_columns = [j for j, m in enumerate(models) if answered[j] and pd.notna(costs.get(m)) and m not in thin]
        pool = [models[j] for j in pool_columns]
        stage("tuning the router kinds")
        refits = Refits(con, embedder.embedder_id, embedder.dim, seed, client, stage)
        try:
            cands = _candidates(con, held, state, split, tuning, val_ids, refits,
                                BuildPool(pool, pool_columns, costs.loc[pool].to_numpy(float), embedder.embedder_id),
                                kinds, stage)
        finally:
            refits.close()
        state.fits.forget_onboardings()  # the held-out scoring reads the fits, not the tuning's onboardings
        del held  # the tuning state keeps its rows (views)
        release_freed()
        router = cands.routers[cands.chosen]
        seconds["fit"] = time.perf_counter() - t0
        tiny = tiny_table_note(cands.chosen, int(router.k), len(split.val))

        t0 = time.perf_counter()
        notes = list(cands.notes) + ([tiny] if tiny else [])
        notes += [f"{m} waits for more evidence ({n} validation answers, {min_answers} needed before it takes traffic)"
                  for m, n in thin.items()]
        if len(split.test_models) >= 2 and len(split.test) >= 2:
            stage("scoring every kind on held-out prompts")
            metrics, curves = held_out_metrics(state, n_val, cands.tuned)
        else:
            metrics, curves = {}, pd.DataFrame(columns=["method", "point", "cost", "score"])
            notes.append(f"held-out evaluation skipped: {len(split.test_models)} model(s) with results on "
                         f"{len(split.test)} common test prompts")
        seconds["evaluate"] = time.perf_counter() - t0
        # The tuning state goes before the recording: its caches (the selection's neighbour orders, the fits) and the
        # held rows it views were the driver's peak through the cluster assignments' write
        # (benchmarks/scale/dask_plane.py --build).
        del state
        release_freed()
        log.info("fitted the candidates in %.1f s, scored them on held-out prompts in %.1f s", seconds["fit"],
                 seconds["evaluate"])

        # The recording writes every build prompt's cluster (1M rows at 1M prompts): held by the open transaction,
        # they filled the fit's 128 MB and the next query failed ("failed to pin block",
        # benchmarks/scale/dask_plane.py --build). The driver is far below its peak here.
        with store.memory_limited(con, BUILD_DUCKDB_MEMORY):
            t0 = time.perf_counter()
            stage("recording the router versions")
            router_id = registry.new_router_id(cands.chosen)
            table = cands.table()
            area_of = dict(zip(table.kind, table.val_area, strict=True))
            val_area = _area(area_of[cands.chosen])
            promoted, reason = _promotion(con, val_area)
            # The gate runs whenever there is a champion, so router_shadow_gate also shows what traffic said of a
            # challenger validation kept out; it only ever withholds a promotion.
            gate = None
            if registry.champion_id(con) is not None:
                stage("replaying recent traffic (shadow gate)")
                gate = shadow_gate(con, router, shadow)
                log.info("%s", gate.line)
                if promoted and gate.refused:
                    promoted, reason = False, f"{reason}, but {gate.line}"
                else:
                    reason = f"{reason}; {gate.line}"
            reason = f"{reason}; {cands.line()}"
            fingerprint = registry.data_fingerprint(con)
            clusters = registry.router_centroids(router)
            if clusters is not None:  # onboarding measures a new model's Psi row by a group-by over these assignments
                stage(f"assigning every prompt to its cluster{' on Dask' if client is not None else ''}")
                store_assignments(con, embedder.embedder_id, clusters, registry.router_clustering_id(router), client)
            router, battle_note = with_battle_models(con, router, lambda: embedder)
            notes.extend([battle_note] if battle_note else [])
            metric_rows = pd.DataFrame(
                [{"method": m, "metric": name, "value": v} for m, vals in metrics.items() for name, v in vals.items()]
            )
            ids, prices = {}, registry.price_snapshot(con)  # the prices model_val_costs read above, in this transaction
            for kind, candidate in cands.routers.items():
                served = kind == cands.chosen
                candidate = router if served else candidate  # the served one also routes the battle-only models
                ids[kind] = router_id if served else registry.new_router_id(kind)
                registry.save_router_version(con, registry.NewVersion(
                    candidate, ids[kind], registry.router_clustering_id(candidate), kind, fingerprint,
                    val_area if served else _area(area_of[kind]), promoted if served else False,
                    reason if served else f"{kind} candidate beside {router_id}",
                    centroids=registry.router_centroids(candidate), candidate_of=None if served else router_id,
                    embedder=embedder, metrics=metric_rows if served else None, curves=curves if served else None,
                    price_snapshot=prices,
                ))
            rows = table.assign(build_router_id=router_id, candidate_router_id=table.kind.map(ids),
                                default_kind=cands.default_kind, created_at=datetime.now(UTC).replace(tzinfo=None))
            store.write_frame(con, "router_candidates", rows)
            if gate is not None:
                record_gate(con, router_id, gate)
            seconds["record"] = time.perf_counter() - t0
            crashpoint("build:written")
        result = BuildResult(
            router_id=router_id,
            kind=cands.chosen,
            k=int(router.k),
            val_area=val_area,
            promoted=promoted,
            reason=reason,
            metrics=metrics,
            models=tuple(router.models),
            excluded_models=excluded_models,
            roles={
                "training": [models[i] for i in split.train_models],
                "test": [models[i] for i in split.test_models],
            },
            n_prompts={"train": len(split.train), "val": n_val, "test": len(split.test)},
            candidates=tuple(rows.drop(columns=["created_at"]).to_dict("records")),
            selection=cands.line(),
            notes=tuple(notes),
            seconds=seconds,
            shadow=None if gate is None else gate.as_dict(),
        )
        log.info(result.line())
        return result


def _candidates(con: store.Connection, held: HeldRows, state: TrialState, split: TrialSplit, tuning: TuningRows,
                val_ids: Mapping[int, str], refits: Refits, pool: BuildPool, kinds: Sequence[str],
                stage: Callable[..., None]) -> Candidates:
    """Every kind tuned and brought to full scale (build_candidates.fit_candidates), the K-means refit started on the
    workers as soon as its K is chosen. Its own scope: the validation vectors' closure goes when it returns."""
    sample = tuning.sample
    train_sampled = len(sample.train) < len(split.train)

    def refit_ahead(tuned: Tuned) -> None:
        if train_sampled and router_kind(tuned.kind).refits_clusters:
            stage(f"K-means (K={tuned.value}) on every training prompt started{' on Dask' if refits.on_dask else ''}"
                  " beside the tuning")
            refits.ahead(tuned.value)

    val_at = held.at(split.val)
    val_psi = psi_data.val_psi(con, [val_ids[i] for i in split.val], lambda: held.vectors(con, val_at))
    return fit_candidates(BuildRows(state, sample, split, held.scores, val_at, val_ids, refits, val_psi),
                          pool, kinds, on_stage=stage, on_tuned=refit_ahead)


def _area(value: float) -> float | None:
    return None if pd.isna(value) else float(value)


def _promotion(con: store.Connection, val_area: float | None) -> tuple[bool, str]:
    """Whether the build's router becomes champion (validation Area not below the champion's), and why."""
    champion_area = registry.champion_val_area(con)
    if champion_area is None:
        reason = "first build" if registry.champion_id(con) is None else "the champion has no validation Area"
        return True, reason
    if val_area is None:
        return True, "no training LLMs to compare validation Areas with: the newest build is served"
    promoted = val_area >= champion_area
    return promoted, f"validation Area {val_area:.4f} {'>=' if promoted else '<'} champion's {champion_area:.4f}"


def held_out_metrics(
    state: TrialState, n_val: int, tuned: dict[str, Tuned]
) -> tuple[dict[str, dict[str, float]], pd.DataFrame]:
    """Area, Area50, QNC, Peak and curve vertices of every candidate kind and ZeroRouter on the test prompts.

    The test LLMs are onboarded on the validation prompts (their Psi or K-NN table), as a new model would be.
    """
    pool = state.test_pool(n_val)
    test_cost = pool.prompt_costs.mean(axis=0)
    test_score = pool.scores.mean(axis=0)
    best = int(np.lexsort((test_cost, -test_score))[0])
    curves = {kind: state.kind_curve(t, n_val, pool) for kind, t in tuned.items()}
    curves["zero"] = state.zero_curve(n_val, pool)
    metrics = {m: curve_metrics(c, float(test_score[best]), float(test_cost[best])) for m, c in curves.items()}
    rows = [
        {"method": m, "point": i, "cost": float(x), "score": float(y)}
        for m, c in curves.items()
        for i, (x, y) in enumerate(zip(c.cost, c.score, strict=True))
    ]
    return metrics, pd.DataFrame(rows)
