"""A fifth router kind, defined in this file alone and registered for it, goes through the whole pipeline: build,
publish, route (store and snapshot), onboard, retire, and the MLflow pyfunc. Nothing outside routers/ knows it;
it is unregistered when the module's tests end, so no other test sees it.

The kind routes every prompt by each model's overall validation loss (the cluster-free router, K = 1), on a tiny
RoutingRule subclass of its own; its row is a model's mean loss, its evidence the results behind it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tests.helpers import build, ingest, onboard, publish, retire
from uniroute import store
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving import route as serving
from uniroute.pipeline.serving import snapshot
from uniroute.routers.kinds import HeldOutState, RouterKind, Tuned, TuningEngine, register_kind, unregister_kind
from uniroute.routers.rule import RoutingRule
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs

KIND = "overall_loss"
NEWCOMER = "synth-llm-04"
PROMPTS = ["solve the equation for x", "write a short poem about rain", "which enzyme breaks down starch",
           "translate good morning into french", "sort a list in python"]


@dataclass(frozen=True, eq=False)
class OverallLossRouter(RoutingRule):
    """gamma(x, m) = m's mean validation loss, whatever the prompt."""

    embedder_id: str
    models: tuple[str, ...]
    costs: np.ndarray  # (M,)
    losses: np.ndarray  # (M,) mean validation loss
    counts: np.ndarray  # (M,) validation results behind each mean
    reference: np.ndarray  # (n, d) validation prompts standing in for budgets

    @property
    def kind(self) -> str:
        return KIND

    @property
    def k(self) -> int:
        return 1

    def gamma(self, X: np.ndarray) -> np.ndarray:
        return np.tile(self.losses, (X.shape[0], 1))

    def budget_reference(self) -> np.ndarray:
        return self.reference

    def clustering_id(self) -> str:
        return "overall-" + hashlib.sha256(self.embedder_id.encode()).hexdigest()[:16]

    def model_row(self, prompt_ids: Sequence[str], X: np.ndarray,
                  losses: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        losses = np.asarray(losses, dtype=np.float64)
        return np.array([losses.mean()]), np.array([losses.size])

    def holds_row(self, model: str, row: np.ndarray, counts: np.ndarray | None, cost: float) -> bool:
        if model not in self.models:
            return False
        i = self.models.index(model)
        return bool(self.losses[i] == row[0] and self.counts[i] == counts[0] and self.costs[i] == cost)

    def with_model(self, name: str, row: np.ndarray, cost: float, counts: np.ndarray | None = None) -> Any:
        keep = [m != name for m in self.models]
        return replace(self, models=(*(m for m in self.models if m != name), name),
                       costs=np.append(self.costs[keep], cost), losses=np.append(self.losses[keep], row[0]),
                       counts=np.append(self.counts[keep], counts[0]))

    def without_model(self, name: str) -> Any:
        keep = [m != name for m in self.models]
        return replace(self, models=tuple(m for m in self.models if m != name), costs=self.costs[keep],
                       losses=self.losses[keep], counts=self.counts[keep])


class OverallLossKind(RouterKind):
    """No hyper-parameter to search: its ladder is K = 1."""

    name = KIND
    title = "Overall validation loss (a test kind)"

    def ladder(self, n_val: int, n_train: int) -> list[int]:
        return [1]

    def onboarding_gammas(self, engine: TuningEngine, value: int, n_val: int, strength: float,
                          purpose: str) -> list[tuple[np.ndarray, Any]]:
        out = []
        for smp in engine.samples(n_val, purpose):
            overall = np.nanmean(engine.data.train_losses[smp.sample], axis=0)
            out.append((np.tile(overall, (len(smp.rest) + len(smp.vrows), 1)), smp.pool))
        return out

    def untuned(self, n_val: int, n_train: int) -> Tuned | None:
        return Tuned(self.name, 1)

    def test_gamma(self, state: HeldOutState, tuned: Tuned, n_val: int) -> np.ndarray:
        overall = np.nanmean(state.test_llm_val_losses(n_val), axis=0)
        return np.tile(overall, (state.X_test.shape[0], 1))

    def served_router(self, engine: TuningEngine, tuned: Tuned, embedder_id: str, models: Sequence[str],
                      losses: np.ndarray, costs: np.ndarray, val_prompt_ids: Sequence[str]) -> OverallLossRouter:
        return OverallLossRouter(embedder_id, tuple(models), np.asarray(costs, dtype=np.float64),
                                 np.nanmean(losses, axis=0), (~np.isnan(losses)).sum(axis=0),
                                 engine.data.X_val[: losses.shape[0]])

    def router_arrays(self, router: OverallLossRouter) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {"losses": router.losses, "counts": router.counts, "reference": router.reference}

    def router_from_arrays(self, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> OverallLossRouter:
        return OverallLossRouter(str(header["embedder_id"]), tuple(str(m) for m in header["models"]),
                                 arrays["costs"], arrays["losses"], arrays["counts"], arrays["reference"])


@pytest.fixture(scope="module")
def registered() -> Iterator[None]:
    register_kind(OverallLossKind())
    yield
    unregister_kind(KIND)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> pd.DataFrame:
    summary = write_synthetic_logs(tmp_path_factory.mktemp("logs"), n_prompts=400, n_models=5, n_topics=4, seed=3,
                                   with_split=True)
    return pd.read_parquet(summary.logs_path)


@pytest.fixture(scope="module")
def pool(registered, logs, tmp_path_factory) -> Settings:
    """A home whose champion is of the test kind (the build fitted it alone), published once."""
    root = tmp_path_factory.mktemp(KIND)
    settings = Settings(home=root / "home")
    settings.home.mkdir()
    logs[logs.model != NEWCOMER].to_parquet(root / "known.parquet", index=False)
    ingest(settings.db_path, root / "known.parquet", progress=False)
    # Build: the kind is tuned (its one-rung ladder), selected (it is the only candidate) and served.
    result = build(settings.db_path, "tfidf", kinds=(KIND,))
    assert result.kind == KIND and result.served == f"{KIND} K=1" and result.as_dict()["served"] == result.served
    assert [c["kind"] for c in result.candidates] == [KIND] and result.val_area is not None
    assert set(result.metrics) == {KIND, "zero"}
    publish(settings.db_path, settings.published_dir)
    return settings


def _champion(db_path: Path) -> registry.RouterVersion:
    with store.opened(db_path, read_only=True) as con:
        return registry.load_champion(con)


def _routed(source: serving.RoutingSource, **request: Any) -> list[str]:
    return serving.route_texts(source, PROMPTS, **request)["model"].tolist()


def test_a_kind_registered_in_a_test_publishes_routes_onboards_and_retires(pool, logs, tmp_path):
    champion = _champion(pool.db_path)
    assert champion.kind == KIND and isinstance(champion.router, OverallLossRouter)

    # Publish and route: the store's champion and the snapshot agree; at lambda 0 every prompt goes to the model
    # with the least overall loss; nothing has a cluster.
    assert snapshot.read_current(pool.published_dir).manifest["kind"] == KIND
    source = serving.routing_source(pool.db_path, pool.published_dir)
    published = serving._from_snapshot(pool.published_dir, "the store is busy (test)")
    for request in ({"lam": 0.0}, {"lam": 5.0}, {"budget": 0.5}):
        assert _routed(source, **request) == _routed(published, **request), request
    best = champion.router.models[int(np.argmin(champion.router.losses))]
    assert _routed(source, lam=0.0) == [best] * len(PROMPTS)
    assert serving.route_texts(source, PROMPTS)["cluster"].isna().all()
    # Explain works for a kind that defines gamma alone: rank 1 is the choice, its terms the argmin's.
    explained = serving.route_texts(source, PROMPTS, lam=5.0, explain=True)
    for model, terms in zip(explained["model"], explained["explain"], strict=True):
        assert terms[0]["model"] == model and terms[0]["total"] == min(t["total"] for t in terms)
    assert explained["model"].tolist() == _routed(source, lam=5.0)

    # Onboard: the newcomer's row is its mean validation loss, from its labels alone (nothing embedded).
    with store.opened(pool.db_path, read_only=True) as con:
        val = set(con.execute("select prompt_id from prompt_splits where split = 'val'").df().prompt_id)
    landed = logs[(logs.model == NEWCOMER) & logs.prompt_id.isin(val)]
    landed.to_parquet(tmp_path / "newcomer.parquet", index=False)
    ingest(pool.db_path, tmp_path / "newcomer.parquet", progress=False)
    onboarded = onboard(pool.db_path, [NEWCOMER])
    child = _champion(pool.db_path)
    assert child.kind == KIND and child.parent_id == champion.router_id and onboarded.embedded_prompts == 0
    assert child.router.models == (*champion.router.models, NEWCOMER)
    assert child.router.losses[-1] == pytest.approx(1.0 - landed.score.mean())
    assert onboard(pool.db_path, [NEWCOMER]).unchanged == (NEWCOMER,)  # the same row: nothing written

    # Retire: the model leaves the pool; routing to it is refused.
    gone = champion.router.models[0]
    retire(pool.db_path, gone)
    publish(pool.db_path, pool.published_dir)
    source = serving.routing_source(pool.db_path, pool.published_dir)
    assert gone not in source.pool and _champion(pool.db_path).kind == KIND
    assert gone not in _routed(source, lam=0.0)
    with pytest.raises(serving.RoutingError, match="retired"):
        _routed(source, pool=[gone])


@pytest.mark.slow
def test_the_pyfunc_routes_a_kind_registered_in_a_test_like_uniroute_route(pool, tmp_path):
    import mlflow

    from uniroute.pipeline.tracking import CHAMPION, REGISTERED_NAME, sync_mlflow
    from uniroute.pipeline.tracking.client import tracking_store

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with store.session(pool.db_path, "reconcile") as s:
        sync_mlflow(s.con, uri, tmp_path / "artifacts")
    with tracking_store(uri):  # in-process, as a serving process loads it
        model = mlflow.pyfunc.load_model(f"models:/{REGISTERED_NAME}@{CHAMPION}")
    source = serving.routing_source(pool.db_path, pool.published_dir)
    for params in ({"lambda": 0.0}, {"lambda": 5.0}, {"budget": 0.5}):
        served = model.predict(pd.DataFrame({"prompt": PROMPTS}), params=params)["model"].tolist()
        assert served == _routed(source, lam=params.get("lambda"), budget=params.get("budget")), params
