"""Replay: logged decisions re-routed from their stored embeddings with a stored router version, a pool edited,
other prices or another setting; the served router reproduces what it served, a pool without a model gives what
`route --pool` gives, and the estimators agree with what came back."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.traffic.replay import ReplaySetting, ReplayWindow, replay, replay_router

runner = CliRunner()


def _sql(home: Path, sql: str) -> pd.DataFrame:
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        return con.execute(sql).df()


def _active(home: Path) -> list[str]:
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        return sorted(store.query(con, "active_models").model)


def _route_file(tmp_path: Path, prompts: list[str], *options: str) -> pd.DataFrame:
    batch = tmp_path / f"prompts{len(list(tmp_path.iterdir()))}.jsonl"
    batch.write_text("".join(json.dumps({"n": i, "prompt": p}) + "\n" for i, p in enumerate(prompts)))
    routed = runner.invoke(app, ["route", "--file", str(batch), *options], catch_exceptions=False)
    assert routed.exit_code == 0, routed.output
    return pd.DataFrame([json.loads(line) for line in routed.stdout.splitlines()])


def _replayed(home: Path, router: str = "champion", without=(), setting=ReplaySetting()):
    with store.opened(home / "uniroute.duckdb", read_only=True) as con:
        using = replay_router(con, router, without=without)
        return replay(con, using, ReplayWindow(), setting)


@pytest.fixture(scope="module")
def logged_template(traffic_template, tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """(home, decisions): a copy of the served home with every synthetic prompt routed three ways (the default
    budget, lambda 0, budget 0.3) and ingested; routed once per module, since every test here starts from it."""
    root = tmp_path_factory.mktemp("logged")
    home, prompts = root / "home", traffic_template[1]
    shutil.copytree(traffic_template[0], home, symlinks=True)
    with pytest.MonkeyPatch.context() as env:
        env.setenv("UNIROUTE_HOME", str(home))
        env.setenv("UNIROUTE_MLFLOW", "false")
        frames = [_route_file(root, prompts), _route_file(root, prompts[:100], "--lambda", "0"),
                  _route_file(root, prompts[100:200], "--budget", "0.3")]
        assert runner.invoke(app, ["inbox", "--no-onboard"], catch_exceptions=False).exit_code == 0
    return home, pd.concat(frames, ignore_index=True)


@pytest.fixture
def traffic_home(logged_template, tmp_path, monkeypatch) -> Path:
    """Here the served home is a private copy of the logged one (each test's replays, outcomes and edits its own)."""
    home = tmp_path / "home"
    shutil.copytree(logged_template[0], home, symlinks=True)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    monkeypatch.setenv("UNIROUTE_MLFLOW", "false")
    return home


@pytest.fixture
def logged(logged_template) -> pd.DataFrame:
    """The decisions the logged home holds: what `route --file` answered for each routed prompt."""
    return logged_template[1].copy()


def test_the_champion_reproduces_every_logged_decision(traffic_home, logged):
    result, traffic = _replayed(traffic_home)
    by_id = dict(zip(traffic.decision_id, np.asarray(traffic.models)[traffic.chosen], strict=True))
    assert len(by_id) == len(logged)
    assert [by_id[d] for d in logged.decision_id] == logged.model.tolist()
    assert np.allclose(traffic.score, traffic.served_score) and np.allclose(traffic.cost, traffic.served_cost)

    cli = runner.invoke(app, ["replay", "--json"], catch_exceptions=False)
    assert cli.exit_code == 0, cli.output
    shown = json.loads(cli.stdout)
    assert shown["overall"]["changed"] == 0 and shown["overall"]["decisions"] == len(logged)
    assert all(abs(m["share_diff"]) < 1e-12 for m in shown["models"])
    kept = _sql(traffic_home, "select router_id, n_decisions, results from replays")
    assert kept.n_decisions.tolist() == [len(logged)]
    assert json.loads(kept.results.iloc[0])["overall"]["changed"] == 0


def test_a_pool_without_a_model_decides_as_route_pool_does(traffic_home, prompts, logged, tmp_path):
    served = logged.model.value_counts().index[0]  # the model the champion serves most
    pool = [m for m in _active(traffic_home) if m != served]
    routed = _route_file(tmp_path, prompts, "--pool", ",".join(pool), "--no-log")
    routed_lam0 = _route_file(tmp_path, prompts[:100], "--pool", ",".join(pool), "--no-log", "--lambda", "0")
    routed_b = _route_file(tmp_path, prompts[100:200], "--pool", ",".join(pool), "--no-log", "--budget", "0.3")
    expected = pd.concat([routed, routed_lam0, routed_b], ignore_index=True).model.tolist()
    _, traffic = _replayed(traffic_home, without=[served])
    by_id = dict(zip(traffic.decision_id, np.asarray(traffic.models)[traffic.chosen], strict=True))
    assert [by_id[d] for d in logged.decision_id] == expected
    assert served not in set(expected)

    cli = runner.invoke(app, ["replay", "--without", served, "--last", str(len(logged))], catch_exceptions=False)
    assert cli.exit_code == 0, cli.output
    assert cli.stdout.startswith(f"# Replay of the last {len(logged):,} decisions"), cli.stdout
    row = next(line for line in cli.stdout.splitlines() if line.startswith(f"| {served} |"))
    assert row.split("|")[2].strip().startswith("0.000 "), row  # no share left, what it served the difference


def test_outcomes_give_the_three_estimates(traffic_home, logged, tmp_path):
    rng = np.random.default_rng(1)
    outcomes = pd.DataFrame({"decision_id": logged.decision_id, "score": rng.integers(0, 2, len(logged)) * 1.0})
    outcomes.to_csv(tmp_path / "outcomes.csv", index=False)
    assert runner.invoke(app, ["ingest", str(tmp_path / "outcomes.csv")]).exit_code == 0
    result, traffic = _replayed(traffic_home)
    out = result["outcomes"]
    realised = outcomes.score.mean()
    # The served router replays its own picks (propensity 1): IPW and DR are the realised mean exactly.
    assert out["decisions"] == len(logged) and out["matched"] == len(logged)
    assert out["ipw"]["mean"] == pytest.approx(realised) and out["doubly_robust"]["mean"] == pytest.approx(realised)
    assert out["direct"]["mean"] == pytest.approx(traffic.served_score.mean())
    assert out["agreement"]["expected_minus_realised"]["mean"] == pytest.approx(traffic.served_score.mean() - realised)
    # Another pool: only the decisions that keep their model count for IPW; DR adds the direct part.
    served = logged.model.value_counts().index[0]
    other, t2 = _replayed(traffic_home, without=[served])
    match = t2.chosen == t2.served
    assert other["outcomes"]["matched"] == int(match.sum()) < len(logged)
    assert other["outcomes"]["ipw"]["mean"] == pytest.approx((t2.outcome * match).mean())
    dr = t2.score + np.where(match, t2.outcome - t2.served_by_replay, 0.0)
    assert other["outcomes"]["doubly_robust"]["mean"] == pytest.approx(dr.mean())
    text = runner.invoke(app, ["replay"], catch_exceptions=False).stdout
    assert "| doubly robust |" in text and "| inverse-propensity weighted |" in text


def test_prices_and_a_setting_change_the_replay(traffic_home, logged, tmp_path):
    models = _active(traffic_home)
    prices = tmp_path / "prices.csv"
    prices.write_text("model,from,per_call\n" + "".join(f"{m},2026-01-01,{0.5 if i else 100.0}\n"
                                                       for i, m in enumerate(models)))
    cli = runner.invoke(app, ["replay", "--prices", str(prices), "--lambda", "1", "--json"], catch_exceptions=False)
    assert cli.exit_code == 0, cli.output
    shown = json.loads(cli.stdout)
    assert {m["model"]: m["share"] for m in shown["models"]}.get(models[0], 0.0) == 0.0  # priced out at lambda 1
    assert shown["inputs"]["lambda"] == 1.0 and shown["setting"] == "lambda 1"


def test_a_price_dated_after_a_decision_does_not_price_it(traffic_home, logged, tmp_path):
    """A price is in force from its day: one dated 2099 leaves today's decisions at the router's costs (it used to
    be taken as the newest price and applied to every decision); a price from a past day applies."""
    models = _active(traffic_home)
    asked = ["replay", "--lambda", "1", "--json"]
    plain = json.loads(runner.invoke(app, asked, catch_exceptions=False).stdout)
    future, past = tmp_path / "future.csv", tmp_path / "past.csv"
    future.write_text("model,from,per_call\n" + "".join(f"{m},2099-01-01,{0.5 if i else 100.0}\n"
                                                        for i, m in enumerate(models)))
    past.write_text(future.read_text().replace("2099-01-01", "2026-01-01") + f"{models[0]},2099-01-01,0.0\n")
    later = json.loads(runner.invoke(app, [*asked, "--prices", str(future)], catch_exceptions=False).stdout)
    assert later["overall"] == plain["overall"] and later["models"] == plain["models"]
    now = json.loads(runner.invoke(app, [*asked, "--prices", str(past)], catch_exceptions=False).stdout)
    assert {m["model"]: m["share"] for m in now["models"]}.get(models[0], 0.0) == 0.0  # 100 per call from 2026
    assert now["overall"] != plain["overall"]


def test_a_max_cost_replay_stays_within_the_cap_on_the_replayed_traffic(traffic_home, logged):
    """--max-cost is calibrated on the replayed decisions themselves: their replayed expected mean cost is within
    the cap, a cap between the cheapest and the dearest model's cost binds, and the JSON says what was asked."""
    _, served = _replayed(traffic_home, setting=ReplaySetting(lam=0.0))
    with store.opened(traffic_home / "uniroute.duckdb", read_only=True) as con:
        cheapest = float(replay_router(con, "champion").router.costs.min())
    unconstrained = float(served.cost.mean())
    assert unconstrained > cheapest  # lambda 0 buys dearer models: there is a cap to bind
    for cap in (cheapest + 0.25 * (unconstrained - cheapest), cheapest + 0.75 * (unconstrained - cheapest)):
        _, capped = _replayed(traffic_home, setting=ReplaySetting(max_cost=cap))
        assert capped.cost.mean() <= cap * (1 + 1e-9)
        assert capped.cost.mean() >= cheapest
    shown = runner.invoke(app, ["replay", "--max-cost", f"{unconstrained:.12g}", "--json"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    out = json.loads(shown.stdout)
    assert out["inputs"]["max_cost"] == pytest.approx(unconstrained) and out["setting"].startswith("max cost")


@pytest.mark.parametrize(("args", "says"), [
    (["--with", "no-such-model"], "has no row for it"),
    (["--without", "no-such-model"], "not in the replayed pool"),
    (["--last", "5", "--since", "2026-01-01"], "give --last or --since, not both"),
    (["--lambda", "1", "--budget", "0.5"], "give one of --lambda, --budget or --max-cost, not several"),
    (["--max-cost", "1", "--budget", "0.5"], "give one of --lambda, --budget or --max-cost, not several"),
    (["--max-cost", "-1"], "max cost must be a finite number >= 0"),
    (["--max-cost", "0"], "below the cheapest pool model's cost"),
    (["--router", "nope"], "no router version 'nope'"),
    (["--router", "challenger"], "no challenger in the store"),
    (["--since", "yesterday"], "is not a date or time"),
])
def test_a_bad_replay_is_refused_in_one_line(traffic_home, logged, args, says):
    result = runner.invoke(app, ["replay", *args])
    assert result.exit_code == 1 and says in result.output and len(result.output.strip().splitlines()) == 1, \
        result.output


def test_a_router_on_another_embedder_is_refused(traffic_home, logged):
    with store.opened(traffic_home / "uniroute.duckdb") as con:
        con.execute("update decisions set embedder_id = 'minilm:other@1' where decision_id in "
                    "(select decision_id from decisions limit 7)")
    result = runner.invoke(app, ["replay"])
    assert result.exit_code == 1, result.output
    assert "minilm:other@1 (7 decisions)" in result.output and len(result.output.strip().splitlines()) == 1


def test_a_logged_cluster_stands_where_the_stored_embedding_would_move_the_prompt(traffic_home, logged):
    # A float16 embedding near a boundary can round into the neighbouring cluster: here one record's embedding is
    # swapped for another cluster's, and the champion still replays what it served, from the logged cluster.
    with store.opened(traffic_home / "uniroute.duckdb") as con:
        # a record and another routed at the same lambda to another model: its embedding lies in another cluster
        moved, embedding = con.execute(
            "select a.decision_id, b.embedding from decisions as a join decisions as b on a.lam = b.lam "
            "and a.model <> b.model order by a.decision_id, b.decision_id limit 1").fetchall()[0]
        con.execute("update decisions set embedding = ? where decision_id = ?", [embedding, moved])
    result, traffic = _replayed(traffic_home)
    assert result["overall"]["changed"] == 0
    assert np.asarray(traffic.models)[traffic.chosen][list(traffic.decision_id).index(moved)] == \
        logged.set_index("decision_id").model[moved]


def test_a_request_whose_caller_named_the_model_is_not_replayed(traffic_home, logged):
    # The gateway records a request naming a pool model with the setting 'fixed by caller': the router chose
    # nothing, so replaying it as the champion's choice would count a change the champion never made.
    with store.opened(traffic_home / "uniroute.duckdb") as con:
        fixed, other = con.execute(
            "select a.decision_id, b.model from decisions as a join decisions as b on a.model <> b.model "
            "order by a.decision_id, b.decision_id limit 1").fetchall()[0]
        con.execute("update decisions set model = ?, setting = 'fixed by caller' where decision_id = ?", [other, fixed])
    result, traffic = _replayed(traffic_home)
    assert fixed not in set(traffic.decision_id) and len(traffic.decision_id) == len(logged) - 1
    assert result["overall"]["changed"] == 0
