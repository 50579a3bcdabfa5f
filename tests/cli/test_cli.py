"""The command line against a real store: help, ingest, read-only SQL, route with --log, publish, retire."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.pool import registry
from uniroute.routers.cluster.kmeans import Centroids
from uniroute.routers.router import Router

runner = CliRunner()
COMMANDS = ("ingest", "build", "onboard", "retire", "publish", "route", "sql", "evaluate", "report", "synth", "models",
            "status")


@pytest.fixture
def cli_home(home, monkeypatch):
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    return home


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_help_lists_every_command():
    result = _invoke("--help")
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command in result.output
    for command in COMMANDS:
        assert _invoke(command, "--help").exit_code == 0


def test_sql_without_a_store_is_a_one_line_error(cli_home):
    result = _invoke("sql", "select 1")
    assert result.exit_code == 1 and "no store" in result.output


def test_ingest_then_read_only_sql(cli_home, tmp_path):
    path = tmp_path / "logs.csv"
    pd.DataFrame({"prompt_id": ["p1", "p2"], "prompt": ["one", "two"], "model": "m", "score": [1, 0],
                  "cost": 0.5}).to_csv(path, index=False)
    result = _invoke("ingest", str(path))
    assert result.exit_code == 0 and "2 results accepted" in result.output
    rows = json.loads(_invoke("sql", "select prompt_id, score from results order by 1", "--json").stdout)
    assert rows == [{"prompt_id": "p1", "score": 1.0}, {"prompt_id": "p2", "score": 0.0}]
    assert _invoke("sql", "select count(*) as n from prompts", "--csv").output == "n\n2\n"
    refused = _invoke("sql", "delete from results")
    assert refused.exit_code == 2 and "read-only" in refused.output  # a refusal: exit code 2, unlike a failure's 1
    assert _invoke("sql", "select count(*) from results").exit_code == 0  # nothing was deleted
    assert json.loads(_invoke("sql", "select count(*) as n from results", "--json").stdout) == [{"n": 2}]


@pytest.fixture
def routed_home(cli_home, tmp_path):
    """A store with two models and a champion over MiniLM embeddings of two topics."""
    from uniroute.embed import make_embedder

    embedder = make_embedder("minilm", progress=False)
    topics = ["How do I sort a list in Python?", "What is the capital of France?"]
    centers = embedder.encode(topics)
    path = tmp_path / "logs.csv"
    pd.DataFrame({"prompt_id": ["a", "b"], "prompt": topics, "model": ["coder", "coder"], "score": [1, 0],
                  "cost": 1.0}).to_csv(path, index=False)
    assert _invoke("ingest", str(path), "--split", "val").exit_code == 0
    pd.DataFrame({"prompt_id": ["a", "b"], "prompt": topics, "model": ["atlas", "atlas"], "score": [0, 1],
                  "cost": 4.0}).to_csv(path, index=False)
    assert _invoke("ingest", str(path), "--split", "val").exit_code == 0
    centroids = Centroids(centers)
    router = Router(embedder.embedder_id, ("coder", "atlas"), np.array([1.0, 4.0]),
                    np.array([[0.0, 1.0], [1.0, 0.0]]), centroids, np.ones((2, 2), dtype=np.int64))
    with store.session(cli_home / "uniroute.duckdb", "test") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            router, "kmeans-cli", "c1", "kmeans", "fp", val_area=0.5, promoted=True, reason="test",
            centroids=centroids))
    return cli_home


def test_inbox_exits_1_naming_a_rejected_file_after_processing_the_others(cli_home, monkeypatch):
    monkeypatch.setenv("UNIROUTE_INBOX_SETTLE_SECONDS", "0.05")
    (cli_home / "inbox").mkdir()
    (cli_home / "inbox" / "good.csv").write_text("prompt_id,prompt,model,score,cost\np1,Q,m1,1,0.5\n")
    (cli_home / "inbox" / "bad.csv").write_text("prompt_id;prompt;model;score;cost\np1;Q;m1;1;0.5\n")
    result = runner.invoke(app, ["inbox", "--no-onboard"])
    assert result.exit_code == 1 and "1 of 2 inbox files failed (bad.csv)" in result.stderr, result.output
    assert "good.csv: ingested" in result.stdout and (cli_home / "inbox" / "done" / "good.csv").exists()
    assert (cli_home / "inbox" / "failed" / "bad.csv.reason.txt").exists()
    assert _invoke("inbox").exit_code == 0  # nothing waiting: nothing failed


def test_output_paths_that_cannot_be_written_are_one_line_errors(cli_home, tmp_path):
    log = tmp_path / "log.csv"
    pd.DataFrame({"prompt_id": ["p1", "p1", "p2", "p2"], "prompt": ["A", "A", "B", "B"], "model": ["m1", "m2"] * 2,
                  "score": [1, 0, 0, 1], "cost": 1.0}).to_csv(log, index=False)
    under_a_file = runner.invoke(app, ["arena-battles", "--data", str(log), "--out", str(log / "b.csv")])
    assert under_a_file.exit_code == 1 and str(log) in under_a_file.stderr, under_a_file.output
    assert isinstance(under_a_file.exception, SystemExit)  # fail()'s exit, not an OSError escaping
    # a map path without .png: matplotlib would write map.png while the command said it wrote "map"
    no_png = runner.invoke(app, ["report", "--similarity", str(tmp_path / "map"), "--data", str(log)])
    assert no_png.exit_code == 1 and "name the .png file to draw" in no_png.stderr
    assert not (tmp_path / "map.png").exists()


def test_ingest_stopping_at_a_bad_file_names_the_files_it_did_not_reach(cli_home, tmp_path):
    good, bad, later = tmp_path / "good.csv", tmp_path / "bad.csv", tmp_path / "later.csv"
    good.write_text("prompt_id,prompt,model,score,cost\np1,Q,m1,1,0.5\n")
    bad.write_text("prompt_id,prompt,model\np1,Q,m1\n")
    later.write_text("prompt_id,prompt,model,score,cost\np2,R,m1,0,0.5\n")
    result = runner.invoke(app, ["ingest", "--json", str(good), str(bad), str(later)])
    assert result.exit_code == 1 and f"(stopped there: {later} not ingested)" in result.stderr, result.output
    assert [s["path"] for s in json.loads(result.stdout)] == [str(good.resolve())]  # what landed is still said


def test_route_picks_per_topic_and_logs_decisions(routed_home):
    result = _invoke("route", "Write a Python function that sorts numbers", "Which city is France's capital?",
                     "--json", "--log")
    assert result.exit_code == 0, result.output
    decisions = json.loads(result.stdout)
    assert [d["model"] for d in decisions] == ["coder", "atlas"]
    # No --budget or --lambda: the default budget answered, and the user is told which setting that was.
    assert {d["setting"] for d in decisions} == {"default budget"} and decisions[0]["budget"] == 0.7
    assert "routed at the default budget 0.7" in result.stderr
    # A large lambda makes cost dominate: everything goes to the cheaper model.
    cheap = json.loads(_invoke("route", "Which city is France's capital?", "--lambda", "10", "--json").stdout)
    assert cheap[0]["model"] == "coder"
    only = json.loads(_invoke("route", "Which city is France's capital?", "--pool", "coder", "--json").stdout)
    assert only[0]["model"] == "coder"
    logged = json.loads(_invoke("sql", "select model from routing_log order by prompt_index", "--json").stdout)
    assert [r["model"] for r in logged] == ["coder", "atlas"]
    both = _invoke("route", "x", "--lambda", "1", "--budget", "0.5")
    assert both.exit_code == 1 and "not both" in both.output


def test_pool_names_take_csv_quoting_for_names_with_commas():
    from uniroute.pipeline.serving.route import pool_names

    assert pool_names("coder,atlas") == ["coder", "atlas"] and pool_names("coder, atlas") == ["coder", "atlas"]
    assert pool_names('"GPT ""4o"", mini",zero cost model') == ['GPT "4o", mini', "zero cost model"]
    assert pool_names("o'brien,modèle-α 😀") == ["o'brien", "modèle-α 😀"]


def test_publish_and_retire_through_the_cli(routed_home):
    first = json.loads(_invoke("publish", "--json").stdout)
    assert first["published"] and set(first["pool"]) == {"coder", "atlas"}
    assert "nothing changed" in _invoke("publish").output
    retired = json.loads(_invoke("retire", "atlas", "--json").stdout)
    # Retiring republishes at once: the published tables lose the model without waiting for a publish.
    assert retired["published"]["published"] and retired["published"]["pool"] == ["coder"]
    assert "nothing changed" in _invoke("publish").output
    with store.opened(routed_home / "uniroute.duckdb", read_only=True) as con:
        models = {r[0] for r in con.execute("select distinct model from current_routing_table").fetchall()}
    assert models == {"coder"}
    refused = _invoke("route", "Which city is France's capital?", "--pool", "atlas")
    assert refused.exit_code == 1 and "retired" in refused.output
    assert _invoke("retire", "nobody").exit_code == 1


def test_build_prints_the_kinds_it_chose_among_and_takes_kinds(cli_home, tmp_path, monkeypatch):
    from uniroute.synth import write_synthetic_logs

    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    summary = write_synthetic_logs(tmp_path / "logs", n_prompts=200, n_models=3, n_topics=3, seed=1, with_split=True)
    assert _invoke("ingest", str(summary.logs_path)).exit_code == 0
    assert "--kinds" in _invoke("build", "--help").output
    bad = _invoke("build", "--embedder", "tfidf", "--kinds", "kmeans,zero")
    assert bad.exit_code == 1 and "unknown router kinds ['zero']: choose from kmeans" in bad.output
    assert json.loads(_invoke("sql", "select count(*) as n from routers", "--json").stdout) == [{"n": 0}]
    costless = tmp_path / "costless.csv"  # a model whose results carry no cost: left out, and the user is told
    pd.DataFrame({"prompt_id": ["p1"], "prompt": ["Q"], "model": ["no-price"], "score": [1],
                  "cost": [None]}).to_csv(costless, index=False)
    assert _invoke("ingest", str(costless)).exit_code == 0
    result = _invoke("build", "--embedder", "tfidf", "--kinds", "knn,kmeans")
    assert result.exit_code == 0, result.output
    assert result.stderr == "left out (no cost on any result; `uniroute models set-cost MODEL COST`): no-price\n"
    lines = result.stdout.splitlines()
    assert lines[0].startswith("built ") and lines[1].startswith("served ")
    header = lines[2].split()
    assert header[:4] == ["kind", "value", "shrinkage", "val_area"]
    assert sorted(line.split()[0] for line in lines[3:5]) == ["kmeans", "knn"]
    chosen = json.loads(_invoke("sql", "select kind from router_selection where chosen", "--json").stdout)
    assert chosen == [{"kind": lines[0].split("(")[1].split()[0]}]


def test_status_shows_champion_pool_publication_last_runs_and_inbox(routed_home, cli_home):
    fresh = _invoke("status")
    assert fresh.exit_code == 0 and "champion" in fresh.output
    assert _invoke("publish").exit_code == 0 and _invoke("retire", "atlas").exit_code == 0
    (routed_home / "inbox").mkdir()
    (routed_home / "inbox" / "late.csv").write_text("prompt_id,prompt,model,score,cost\n")
    (routed_home / "inbox" / "half.csv.part").write_text("")  # still being written: not waiting yet
    shown = json.loads(_invoke("status", "--json").stdout)
    assert shown["champion"]["origin"] == "retire" and shown["champion"]["kind"] == "kmeans"
    assert shown["active_models"] == ["coder"] and shown["retired_models"] == ["atlas"]
    assert shown["publication"]["router_id"] == shown["champion"]["router_id"]
    assert shown["publication"]["pool"] == ["coder"]
    runs = {run["kind"]: run["status"] for run in shown["last_runs"]}
    assert runs["retire"] == "succeeded" and runs["publish"] == "succeeded"
    assert shown["inbox_waiting"] == ["late.csv"] and shown["inbox_failed"] == 0
    screen = _invoke("status").output
    assert "pool       1 active: coder" in screen and "retired    atlas" in screen
    # Its K is 2: a table that can hardly differ between prompts, said in one sentence.
    assert "note       K = 2 was tuned: too few validation answers" in screen
    assert any("more validation answers would help" in note for note in shown["notes"])
    assert "1 file(s) waiting (late.csv)" in screen


def test_status_without_a_store_says_what_to_do_first(cli_home):
    result = _invoke("status")
    assert result.exit_code == 0 and "no store yet" in result.output and "champion   none yet" in result.output


def test_ingest_takes_a_folder_and_refuses_a_missing_path_before_creating_the_store(cli_home, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    for name, model in (("a.csv", "m1"), ("b.csv", "m2")):
        pd.DataFrame({"prompt_id": ["p1", "p2"], "prompt": ["one", "two"], "model": model, "score": [1, 0],
                      "cost": 0.5}).to_csv(folder / name, index=False)
    (folder / "c.csv.part").write_text("still being written")
    missing = _invoke("ingest", str(tmp_path / "nowhere.csv"))
    assert missing.exit_code == 1 and "nowhere.csv: no such file" in missing.output
    assert not (cli_home / "uniroute.duckdb").exists() and not (cli_home / "uniroute.duckdb.lock").exists()
    result = _invoke("ingest", str(folder), "--json")
    assert result.exit_code == 0, result.output
    assert [Path(s["path"]).name for s in json.loads(result.stdout)] == ["a.csv", "b.csv"]
    # The lock file says nothing once the command is over (it used to name the finished operation).
    assert (cli_home / "uniroute.duckdb.lock").read_text() == ""


def test_costs_from_a_file_all_or_none_and_models_list_shows_the_results_costs(cli_home, tmp_path):
    path = tmp_path / "logs.csv"
    pd.DataFrame({"prompt_id": ["p1", "p2", "p1", "p2"], "prompt": ["one", "two", "one", "two"],
                  "model": ["m1", "m1", "m2", "m2"], "score": [1, 0, 0, 1],
                  "cost": [0.5, 0.7, None, None]}).to_csv(path, index=False)
    assert _invoke("ingest", str(path)).exit_code == 0
    listed = json.loads(_invoke("models", "list", "--json").stdout)
    assert [(m["model"], m["default_cost"], m["mean_result_cost"]) for m in listed] == [("m1", None, 0.6),
                                                                                        ("m2", None, None)]
    # Without a cost for m2 the build says which models lack one, not that the store has 0 prompts.
    no_cost = _invoke("build")
    assert no_cost.exit_code == 1 and "have results but no cost (m2)" in no_cost.output
    costs = tmp_path / "default_llm.json"  # pretty-printed, as LLMRouter's candidate files are
    costs.write_text(json.dumps({"m1": {"cost": 0.4, "provider": "x"}, "m2": 2.5}, indent=2))
    result = _invoke("models", "set-cost", "--file", str(costs), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["costs"] == {"m1": 0.4, "m2": 2.5}
    listed = {m["model"]: m["default_cost"] for m in json.loads(_invoke("models", "list", "--json").stdout)}
    assert listed == {"m1": 0.4, "m2": 2.5}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"m1": 9.0, "m2": -1}, indent=2))
    refused = _invoke("models", "set-cost", "--file", str(bad))
    assert refused.exit_code == 1 and 'entry 2 ("m2")' in refused.output and "[0, 1e+06]" in refused.output
    listed = {m["model"]: m["default_cost"] for m in json.loads(_invoke("models", "list", "--json").stdout)}
    assert listed == {"m1": 0.4, "m2": 2.5}  # all or none: m1 kept its cost
    assert _invoke("models", "set-cost", "m1").exit_code == 1  # a model without a cost, and no file


def test_every_command_takes_json():
    """docs/cli.md promises --json on every command; a command without it is a broken promise."""
    for command in (*COMMANDS, "inbox", "doctor", "arena-battles", "annotate"):
        words = ["models", "list"] if command == "models" else [command]
        assert "--json" in _invoke(*words, "--help").output, command
    assert "--json" in _invoke("models", "set-cost", "--help").output


def test_report_and_arena_battles_print_json(tmp_path):
    from pathlib import Path as _Path

    saved = _Path(__file__).resolve().parents[2] / "docs" / "results" / "routerdc_model7.json"
    report = json.loads(_invoke("report", str(saved), "--json").stdout)
    assert report["markdown"].startswith("#") or "|" in report["markdown"]
    from tests.synthetic_logs import synthetic_long

    log = tmp_path / "log.parquet"
    synthetic_long(60).to_parquet(log)
    out = json.loads(_invoke("arena-battles", "--data", str(log), "--out", str(tmp_path / "b.csv"), "--json").stdout)
    assert out["battles"] == 60 and out["out"].endswith("b.csv")


def test_route_file_keeps_the_inputs_other_fields_beside_each_decision(routed_home, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("\n".join(json.dumps(r) for r in (
        {"id": 7, "prompt": "Write a Python function that sorts numbers", "user": "ana", "model": "theirs"},
        {"prompt": "Which city is France's capital?", "session": "s1"},
    )) + "\n")
    result = _invoke("route", "--file", str(prompts), "--lambda", "0")
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert lines[0]["id"] == 7 and lines[0]["user"] == "ana" and lines[0]["input_model"] == "theirs"
    assert lines[0]["model"] == "coder" and lines[1]["session"] == "s1" and lines[1]["model"] == "atlas"
    assert lines[0]["setting"] == "lambda" and "prompt" not in lines[0]
    csv_file = tmp_path / "prompts.csv"
    pd.DataFrame({"ticket": ["T1"], "prompt": ["Which city is France's capital?"]}).to_csv(csv_file, index=False)
    row = json.loads(_invoke("route", "--file", str(csv_file), "--lambda", "0").stdout)
    assert row["ticket"] == "T1" and row["model"] == "atlas"


def test_ingest_says_which_models_have_no_cost_yet(cli_home, tmp_path):
    path = tmp_path / "logs.csv"
    pd.DataFrame({"prompt_id": ["p1", "p1"], "prompt": ["one", "one"], "model": ["priced", "free-form"],
                  "score": [1, 0], "cost": [0.5, None]}).to_csv(path, index=False)
    result = _invoke("ingest", str(path))
    assert result.exit_code == 0, result.output
    assert "note: 1 model(s) have no cost yet (free-form)" in result.stderr and "set-cost" in result.stderr


def test_route_with_a_named_router_version(routed_home):
    # A challenger that swapped the two specialists: --router routes with it, the champion stays as it was.
    with store.opened(routed_home / "uniroute.duckdb", read_only=True) as con:
        champion_router = registry.load_champion(con).router
    swapped = Router(champion_router.embedder_id, ("coder", "atlas"), np.array([1.0, 4.0]),
                     np.array([[1.0, 0.0], [0.0, 1.0]]), champion_router.assigner, np.ones((2, 2), dtype=np.int64))
    with store.session(routed_home / "uniroute.duckdb", "test") as s:
        registry.save_router_version(s.con, registry.NewVersion(
            swapped, "kmeans-challenger", "c1", "kmeans", "fp", val_area=0.4, promoted=False, reason="test"))
    prompt = "Write a Python function that sorts numbers"
    assert json.loads(_invoke("route", prompt, "--lambda", "0", "--json").stdout)[0]["model"] == "coder"
    other = json.loads(_invoke("route", prompt, "--lambda", "0", "--router", "kmeans-challenger", "--json").stdout)
    assert other[0]["model"] == "atlas" and other[0]["router_id"] == "kmeans-challenger"
    missing = _invoke("route", prompt, "--router", "kmeans-nowhere")
    assert missing.exit_code == 1 and "no router version 'kmeans-nowhere'" in missing.output
