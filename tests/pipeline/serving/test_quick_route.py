"""The one-prompt route from the compact publication (operations.route_quickly) answers exactly as the store path
(operations.route): every field of every decision, its spool record and its errors, for many prompts and
settings, on routers of three kinds; and it steps aside (None: read the store) whenever it cannot prove that."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import build, ingest, publish, retire
from uniroute import operations
from uniroute.environment import QuickSettings
from uniroute.frame_output import exact_records
from uniroute.pipeline.serving import quick_route
from uniroute.pipeline.serving.route import RoutingError, RoutingRequest
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs

PROMPTS = ["solve the equation for x", "write a short poem about rain", "which enzyme breaks down starch",
           "translate good morning into french", "sort a list in python", "derivative of x squared",
           "a haiku about the sea", "what is the capital of peru", "explain recursion to a child",
           "integrate sin x from zero to pi", "name three noble gases", "fix this off by one error in my loop"]
# Settings a request without traffic can name: the default (published at publish time), lambdas, a named pool
# (whose default is worked out on the store path's memo), both.
REQUESTS = [{}, {"lam": 0.0}, {"lam": 0.4}, {"lam": 30.0}, {"pool": ("synth-llm-00", "synth-llm-02")},
            {"pool": ("synth-llm-03", "synth-llm-01", "synth-llm-00"), "lam": 2.0}]
RETIRED = "synth-llm-04"
# Fields that differ by construction between two routings of one prompt: a fresh id, the time of the record.
FRESH = ("decision_id", "decided_at")


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Path:
    summary = write_synthetic_logs(tmp_path_factory.mktemp("logs"), n_prompts=300, n_models=5, n_topics=4, seed=5,
                                   with_split=True)
    return Path(summary.logs_path)


@pytest.fixture(scope="module", params=["kmeans_shrunk", "knn", "learnedmap"])
def published(request, tmp_path_factory, logs) -> Settings:
    """A home whose champion (one kind, tfidf) is published, one model retired, the store file settled."""
    settings = Settings(home=tmp_path_factory.mktemp(request.param) / "home", mlflow=False)
    settings.home.mkdir()
    ingest(settings.db_path, logs, progress=False)
    build(settings.db_path, "tfidf", kinds=(request.param,))
    publish(settings.db_path, settings.published_dir)
    retire(settings.db_path, RETIRED)  # republishes without it
    _settle(settings.db_path)
    return settings


def _settle(db_path: Path) -> None:
    """Date the store file back: a file written within quick_route.SETTLED_SECONDS is never trusted as a key."""
    old = time.time() - 10
    os.utime(db_path, (old, old))


def _spooled(path: Path | None) -> list[dict]:
    assert path is not None
    return [{k: v for k, v in json.loads(line).items() if k not in FRESH} for line in path.read_text().splitlines()]


def _both(settings: Settings, texts: list[str], **request):
    """(route(), route_quickly()) of one request: the store path first, which keeps what it found for the other."""
    ctx = operations.Context.of(settings)
    stored = operations.route(ctx, texts, RoutingRequest(**request))
    quickly = operations.route_quickly(QuickSettings(home=settings.home), texts, RoutingRequest(**request))
    assert quickly is not None, "the quick path stepped aside on a settled, published store"
    return stored, quickly


def test_the_quick_path_decides_and_records_as_the_store_path(published):
    for request in REQUESTS:
        stored, quickly = _both(published, PROMPTS, **request)
        assert quickly.router_id == stored.router_id and quickly.source == stored.source
        frame = stored.decisions.drop(columns=["decision_id"])
        pd.testing.assert_frame_equal(quickly.decided.frame().drop(columns=["decision_id"]), frame)
        assert [{k: v for k, v in r.items() if k != "decision_id"} for r in quickly.decided.records()] \
            == [{k: v for k, v in r.items() if k != "decision_id"} for r in exact_records(stored.decisions)]
        assert _spooled(quickly.recorded_to) == _spooled(stored.recorded_to), request


def test_the_quick_path_refuses_what_the_store_path_refuses(published):
    _both(published, PROMPTS[:1])  # the store's answer kept
    bad = [(["fine", "  "], {}), ([], {}), (["x"], {"pool": (RETIRED,)}), (["x"], {"pool": ("no-such-model",)}),
           (["x"], {"pool": ("synth-llm-00", "no-such-model"), "lam": 1.0})]
    for texts, request in bad:
        with pytest.raises(RoutingError) as on_store:
            operations.route(operations.Context.of(published), texts, RoutingRequest(**request))
        with pytest.raises(RoutingError) as quick:
            operations.route_quickly(QuickSettings(home=published.home), texts, RoutingRequest(**request))
        assert str(quick.value) == str(on_store.value)


@pytest.mark.parametrize("change", ["store written", "no serving file", "router damaged", "nothing kept",
                                    "store just written", "writer holds the store"])
def test_the_quick_path_steps_aside_when_it_cannot_prove_the_store_answer(published, change, tmp_path):
    import shutil

    home = tmp_path / "home"
    shutil.copytree(published.home, home, symlinks=True)
    settings = Settings(home=home, mlflow=False)
    _settle(settings.db_path)
    _both(settings, PROMPTS[:1])
    quick = QuickSettings(home=home)
    current = Path(os.path.realpath(settings.published_dir / "current"))
    if change == "store written":  # any write moves the store file's size or time (here: the time alone)
        os.utime(settings.db_path, (time.time() - 5, time.time() - 5))
    elif change == "no serving file":  # a snapshot published before serving.json existed
        manifest = json.loads((current / "manifest.json").read_text())
        manifest["files"].remove(quick_route.SERVING_FILE)
        (current / "manifest.json").write_text(json.dumps(manifest))
    elif change == "router damaged":
        (current / "router.npz").write_bytes((current / "router.npz").read_bytes()[:-10])
    elif change == "nothing kept":
        (settings.cache_dir / quick_route.STATE_FILE).unlink()
    elif change == "store just written":  # a key taken within a write's time granularity is not trusted
        os.utime(settings.db_path)
    if change == "writer holds the store":
        from uniroute.store.lock import acquire_writer_lock

        lock = acquire_writer_lock(settings.db_path, "test")
        try:
            assert operations.route_quickly(quick, ["x"], RoutingRequest()) is None
        finally:
            lock.release()
    else:
        assert operations.route_quickly(quick, ["x"], RoutingRequest()) is None
    # Settings that read the store's traffic always take the store path.
    assert operations.route_quickly(quick, ["x"], RoutingRequest(budget=0.5)) is None
