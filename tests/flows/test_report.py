"""The Markdown and tables flow runs leave in Prefect, built from result objects and the hand-checked store."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pandas as pd

from flows.artifacts import (
    build_markdown,
    build_run_name,
    candidate_rows,
    evaluation_rows,
    inbox_run_name,
    mlflow_links,
    onboard_run_name,
    onboarding_markdown,
    publish_markdown,
    publish_run_name,
)
from tests.sql.views_store import write_views_store
from uniroute import store
from uniroute.ingest.inbox import InboxOutcome
from uniroute.ingest.load import IngestSummary
from uniroute.pipeline.build.nightly import BuildResult
from uniroute.pipeline.pool.onboard import OnboardResult
from uniroute.pipeline.serving.publish import PublishResult
from uniroute.pipeline.traffic.shadow_gate import ShadowGate
from uniroute.settings import Settings


def _build() -> BuildResult:
    return BuildResult(
        router_id="R2", kind="kmeans", k=2, val_area=0.61234, promoted=True,
        reason="validation Area 0.6123 >= champion's 0.6000",
        metrics={"zero": {"area": 0.5, "area50": 0.2, "qnc": math.inf, "peak": 0.7},
                 "kmeans": {"area": 0.6, "area50": 0.25, "qnc": 0.41666, "peak": 0.8}},
        models=("a", "b", "c"), excluded_models=(), roles={"training": ["a", "b", "c"]},
        n_prompts={"train": 60, "val": 10, "test": 30}, seconds={"fit": 1.25},
        candidates=({"kind": "kmeans", "value": 2, "shrinkage": 0.0, "val_area": 0.61234, "val_area_se": 0.01,
                     "diff_to_default": 0.0, "diff_se": 0.0, "p_best": 0.7, "chosen": True},
                    {"kind": "knn", "value": 5, "shrinkage": 0.0, "val_area": 0.6, "val_area_se": 0.02,
                     "diff_to_default": -0.01234, "diff_se": 0.005, "p_best": 0.3, "chosen": False}),
        selection="served kmeans K=2 (val Area 0.6123 +/- 0.0100, best in 70% of resamples)")


def _query(db: Path, name: str, **params):
    with store.opened(db, read_only=True) as con:
        return store.query(con, name, **params)


def test_evaluation_rows_are_json_safe_and_best_first():
    assert evaluation_rows(_build()) == [
        {"method": "kmeans", "area": 0.6, "area50": 0.25, "qnc": 0.4167, "peak": 0.8},
        {"method": "zero", "area": 0.5, "area50": 0.2, "qnc": "inf", "peak": 0.7}]


def test_build_markdown_shows_outcome_candidates_evaluation_and_mlflow_links(db_path):
    db = write_views_store(db_path)
    candidates = _query(db, "build_candidates", router_id="R2")
    # R2 stands in for this build's served router (no candidate was written beside it); R1 is the champion
    # it was measured against.
    assert candidates[["role", "router_id"]].values.tolist() == [
        ["this build (served)", "R2"], ["champion before this build", "R1"]]
    links = mlflow_links(Settings(mlflow_port=5123), "run1")
    assert links == {"run": "http://127.0.0.1:5123/#/runs/run1",
                     "curves": "http://127.0.0.1:5123/get-artifact?path=deferral_curves.png&run_uuid=run1"}
    text = build_markdown(_build(), candidates, "run1", links)
    assert text.startswith("# Nightly build: R2\n\n**Promoted to champion**: validation Area 0.6123 >= champion's")
    assert "- MLflow run: [run1](http://127.0.0.1:5123/#/runs/run1), [deferral curves](" in text
    assert "| this build (served) | R2 | kmeans | 2 | 0.5 | True | test |" in text
    assert "| kmeans | 0.6 | 0.25 | 0.4167 | 0.8 |" in text and "| zero | 0.5 | 0.2 | inf | 0.7 |" in text
    assert "served kmeans K=2 (val Area 0.6123 +/- 0.0100, best in 70% of resamples)" in text
    assert "| kmeans | 2 | 0 | 0.6123 | 0.01 | 0 | 0 | 0.7 | True |" in text
    assert "| knn | 5 | 0 | 0.6 | 0.02 | -0.0123 | 0.005 | 0.3 | False |" in text
    assert [r["kind"] for r in candidate_rows(_build())] == ["kmeans", "knn"]  # best validation Area first
    assert build_run_name(_build()) == "built R2 kmeans K=2 3 models (champion)"
    assert mlflow_links(Settings(), None) == {}
    assert "## Shadow gate" not in text  # no champion to compare with


def test_build_markdown_shows_the_shadow_gate(db_path):
    db = write_views_store(db_path)
    candidates = _query(db, "build_candidates", router_id="R2")
    gate = ShadowGate("refuse", "shadow gate refused: on 300 decisions ...", 7.0, "R1", 300, 0.01, 0.7, 0.6, -0.1,
                      0.01, 0.0)
    text = build_markdown(replace(_build(), promoted=False, shadow=gate.as_dict()), candidates, None, {})
    assert "## Shadow gate (recent traffic, challenger vs champion at the same expected spend)" in text
    assert "shadow gate refused: on 300 decisions ..." in text
    assert "| refuse | 7 | R1 | 300 | 0.01 | 0.7 | 0.6 | -0.1 | 0.01 | 0 | one-sided paired z-test" in text


def test_publish_markdown_says_what_changed_and_the_new_traffic_shares(db_path):
    db = write_views_store(db_path)
    result = PublishResult(True, "V2", "R2", ("a", "b", "c"), "published")
    changes = _query(db, "publication_changes", version="V2")
    traffic = _query(db, "publication_traffic", version="V2")
    assert publish_markdown(result, changes, traffic) == "\n".join([
        "# Published V2", "", "Router R2; pool: a, b, c.", "",
        "## Changes since V1 (budget grid)", "",
        "| budget | model | pool_change | share_before | share_after | share_change | clusters_gained "
        "| clusters_lost |",
        "|---:|---|---|---:|---:|---:|---|---|",
        "| 0.5 | a |  | 0.75 | 0 | -0.75 | [] | [0] |",
        "| 0.5 | c | added | 0 | 0.75 | 0.75 | [0] | [] |",
        "", "## Traffic share per model at each budget", "",
        "| model | budget 0.5 |", "|---|---:|", "| a | 0 |", "| b | 0.25 |", "| c | 0.75 |"])
    first = publish_markdown(PublishResult(True, "V1", "R1", ("a", "b"), "published"),
                             _query(db, "publication_changes", version="V1"), traffic.iloc[:0])
    assert "No earlier publication, or no model's traffic changed." in first
    assert publish_run_name(result) == "published V2"
    assert publish_run_name(PublishResult(False, "V2", "R2", (), "nothing changed since V2")) == (
        "unchanged: nothing changed since V2")


def test_onboarding_markdown_counts_the_evidence_of_each_new_model(db_path):
    db = write_views_store(db_path)
    evidence = _query(db, "models_evidence", router_id="R2", models=["c"])
    assert evidence[["cluster", "val_answers", "uses_fallback"]].values.tolist() == [[0, 3, False], [1, 0, True]]
    result = OnboardResult("R2", "R1", ("c",), (), 4, 0.5)
    text = onboarding_markdown(result, evidence)
    assert text.startswith("# Onboarding c\n\nonboarded c -> router R2 (parent R1), 4 new prompts embedded, 0.50s.")
    assert onboard_run_name(result) == "onboarded c -> R2"
    assert onboard_run_name(OnboardResult("R2", "R1", (), ("c",), 0, 0.1)) == "c already routable in R2"
    # 2 clusters, 1 with evidence, 1 on fallback; error (.1 * 3 + .5 * 1) / 4 with clusters weighted by their prompts
    assert "| c | 2 | 1 | 1 | 3 | 0.2 |" in text


def test_inbox_run_name_counts_what_happened():
    summary = IngestSummary("a.csv", "h", "long", "ingested", landed_models=("m2", "m1"))
    outcomes = [InboxOutcome("a.csv", "ingested", "done/a.csv", summary, None),
                InboxOutcome("b.csv", "failed", "failed/b.csv", None, "bad"),
                InboxOutcome("c.csv", "ingested", "done/c.csv", None, None)]
    assert inbox_run_name(outcomes) == "inbox: 2 ingested, 1 failed; results landed for m1, m2"
    assert inbox_run_name([]) == "inbox: nothing new"


def test_onboarding_markdown_says_the_evidence_gate():
    gate = {"c": {"status": "provisional", "budget": 0.4, "provisional_clusters": [0], "next_prompts": ["v03", "v07"]},
            "d": {"status": "full", "budget": 0.4, "provisional_clusters": [], "next_prompts": []}}
    result = OnboardResult("R2", "R1", ("c", "d"), (), 0, 0.5, gate=gate)
    rows = pd.DataFrame({"model": ["c"], "cluster": [0], "answers": [3], "provisional": [True]})
    text = onboarding_markdown(result, pd.DataFrame(), rows)
    assert "## Evidence gate" in text
    assert "- c: **provisional** in clusters [0]: routed there by the upper end of its error's interval; answer " \
           "next: v03, v07" in text
    assert "- d: full" in text and "| c | 0 | 3 | True |" in text
    assert "Evidence gate" not in onboarding_markdown(OnboardResult("R2", "R1", ("c",), (), 0, 0.5), pd.DataFrame())
