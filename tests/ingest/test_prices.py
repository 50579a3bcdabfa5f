"""Prices with dates (ingest/prices.py, sql/schema/014_prices.sql): `uniroute models set-price` and `--file`,
refusals in one line that change nothing, the price in force by date as routing's cost, token prices charged
by `priced_call_cost`, and the price snapshot a build, its publication and `route` name."""

from __future__ import annotations

import json
from datetime import date, timedelta

import duckdb
import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.helpers import build, ingest, publish, retire
from tests.ingest.files import long_csv, rows, write
from uniroute import store
from uniroute.cli import app
from uniroute.pipeline.pool import registry
from uniroute.pipeline.serving import route as serving
from uniroute.settings import Settings
from uniroute.synth import write_synthetic_logs

runner = CliRunner()


def _invoke(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def priced_home(home, db_path, tmp_path, monkeypatch):
    """A store with two models' validation results (gpt-x logged at cost 1.0, gpt-y at 3.0) and one retired."""
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    ingest(db_path, write(tmp_path / "a.csv", long_csv(
        "p1,Q1,gpt-x,1,1.0", "p2,Q2,gpt-x,0,1.0", "p1,Q1,gpt-y,1,3.0", "p2,Q2,gpt-y,1,3.0", "p1,Q1,old,1,2.0")),
        split="val", progress=False)
    with store.session(db_path, "retire-test") as s:
        s.con.execute("update models set status = 'retired' where model = 'old'")
        s.con.execute("insert into prompt_splits select prompt_id, 'val', 'logs', now()::timestamp from prompts")
    return db_path


def _val_costs(db_path) -> dict[str, float]:
    with store.opened(db_path, read_only=True) as con:
        return store.query(con, "model_val_costs").set_index("model")["cost"].to_dict()


def test_a_per_call_price_in_force_is_the_routing_cost_and_a_future_one_waits(priced_home):
    assert _val_costs(priced_home) == {"gpt-x": 1.0, "gpt-y": 3.0}  # the logs alone
    # Two days ahead, read now: a run that crosses midnight (CI at 00:00 UTC) keeps the price in the future.
    tomorrow = (date.today() + timedelta(days=2)).isoformat()
    result = _invoke("models", "set-price", "gpt-y", "--per-call", "0.5", "--from", tomorrow)
    assert result.exit_code == 0 and result.stdout.strip() == f"gpt-y: 0.5 per call from {tomorrow}"
    assert _val_costs(priced_home) == {"gpt-x": 1.0, "gpt-y": 3.0}  # not in force yet
    assert _invoke("models", "set-price", "gpt-y", "--per-call", "2", "--from", "2020-01-01").exit_code == 0
    assert _val_costs(priced_home) == {"gpt-x": 1.0, "gpt-y": 2.0}  # a price says what a call costs now
    listed = {m["model"]: m for m in json.loads(_invoke("models", "list", "--json").stdout)}
    assert listed["gpt-y"]["default_cost"] == 2.0 and listed["gpt-y"]["mean_result_cost"] == 3.0
    # set-cost is the undated per-call price: a dated price wins from its date on.
    assert _invoke("models", "set-cost", "gpt-x", "0.25").exit_code == 0
    assert _val_costs(priced_home)["gpt-x"] == 0.25
    assert _invoke("models", "set-price", "gpt-x", "--per-call", "0.75", "--from", "2021-06-01").exit_code == 0
    assert _val_costs(priced_home)["gpt-x"] == 0.75


def test_token_prices_charge_calls_that_carry_tokens(priced_home):
    assert _invoke("models", "set-price", "gpt-x", "--input", "2.5", "--output", "10", "--from", "2024-01-01",
                   "--json").exit_code == 0
    assert _invoke("models", "set-price", "gpt-x", "--input", "1", "--output", "4", "--from", "2025-01-01").exit_code \
        == 0
    charged = rows(priced_home, "select priced_call_cost('gpt-x', date '2024-06-01', 1000, 500), "
                                "priced_call_cost('gpt-x', date '2025-06-01', 1000, 500), "
                                "priced_call_cost('gpt-x', date '2023-06-01', 1000, 500), "
                                "priced_call_cost('gpt-x', date '2025-06-01', null, 500)")
    assert charged == [(pytest.approx((1000 * 2.5 + 500 * 10) / 1e6), pytest.approx((1000 + 500 * 4) / 1e6), None,
                        None)]
    # Validation results carry no tokens: a token price leaves routing on the logged costs.
    assert _val_costs(priced_home)["gpt-x"] == 1.0


BAD = {
    "unknown model": (["gpt-z", "--per-call", "1", "--from", "2024-01-01"], "unknown model 'gpt-z'"),
    "retired model": (["old", "--per-call", "1", "--from", "2024-01-01"], "model 'old' is retired"),
    "both kinds": (["gpt-x", "--per-call", "1", "--input", "1", "--output", "2", "--from", "2024-01-01"],
                   "not both"),
    "one token price": (["gpt-x", "--input", "1", "--from", "2024-01-01"], "not one token price alone"),
    "no date": (["gpt-x", "--per-call", "1"], "no `from` date"),
    "bad date": (["gpt-x", "--per-call", "1", "--from", "2024-13-01"], 'is not a date'),
    "negative": (["gpt-x", "--per-call", "--", "-1", "--from", "2024-01-01"], None),
    "infinite": (["gpt-x", "--input", "inf", "--output", "1", "--from", "2024-01-01"], "finite number"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_price_is_refused_in_one_line_and_changes_nothing(priced_home, case):
    args, words = BAD[case]
    result = runner.invoke(app, ["models", "set-price", *args])
    assert result.exit_code != 0
    if words is not None:
        assert words in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert rows(priced_home, "select count(*) from prices") == [(0,)]


def test_a_price_file_is_all_or_nothing(priced_home, tmp_path):
    good = write(tmp_path / "prices.csv", "model,from,input,output,per_call\ngpt-x,2024-01-01,1,2,\n"
                                          "gpt-y,2024-01-01,,,0.5\n")
    assert _invoke("models", "set-price", "--file", str(good)).stdout.strip() == f"2 prices set from {good}"
    assert rows(priced_home, "select model, input_per_mtok, per_call from prices order by model") == [
        ("gpt-x", 1.0, None), ("gpt-y", None, 0.5)]
    bad = write(tmp_path / "bad.jsonl", '{"model": "gpt-x", "from": "2025-01-01", "per_call": 1}\n'
                                        '{"model": "old", "from": "2025-01-01", "per_call": 1}\n')
    result = runner.invoke(app, ["models", "set-price", "--file", str(bad)])
    assert result.exit_code == 1 and "model 'old' is retired" in result.stderr
    worse = write(tmp_path / "worse.json", '[{"model": "gpt-x", "from": "2025-01-01", "per_call": "lots"}]')
    result = runner.invoke(app, ["models", "set-price", "--file", str(worse)])
    assert result.stderr.strip() == f'error: {worse}: row 1: per-call price "lots" is not a number'
    assert rows(priced_home, "select count(*) from prices") == [(2,)]


def test_a_store_upgraded_to_prices_keeps_its_default_costs_as_undated_prices(tmp_path):
    old = tmp_path / "old.duckdb"
    with duckdb.connect(str(old)) as con:
        for file in sorted((store.schema.SQL_DIR.parent / "tests" / "store" / "schema_v0").glob("*.sql")):
            con.execute(file.read_text())
        con.execute("insert into models values ('m', 0.125, 'active', now()::timestamp), "
                    "('n', null, 'active', now()::timestamp)")
    assert rows(old, "select model, valid_from::varchar, per_call, source from prices") == [
        ("m", "1970-01-01", 0.125, "models.default_cost")]
    assert rows(old, "select model, default_cost from priced_models order by model") == [("m", 0.125), ("n", None)]


def test_a_build_its_publication_and_route_name_their_price_snapshot(tmp_path, monkeypatch):
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    monkeypatch.setenv("UNIROUTE_HOME", str(settings.home))
    summary = write_synthetic_logs(tmp_path / "logs", n_prompts=200, n_models=3, n_topics=3, seed=5, with_split=True)
    ingest(settings.db_path, summary.logs_path, progress=False)
    models = sorted(pd.read_parquet(summary.logs_path).model.unique())
    assert _invoke("models", "set-price", models[0], "--per-call", "0.001", "--from", "2024-01-01").exit_code == 0
    before = date.today().isoformat()
    with store.opened(settings.db_path, read_only=True) as con:
        expected = registry.price_snapshot(con)
    days = {before, date.today().isoformat()}  # the day the snapshot was taken, even across midnight
    assert expected.split("/")[0] in days and "no prices" not in expected
    built = build(settings.db_path, "tfidf", kinds=("kmeans",))
    with store.opened(settings.db_path, read_only=True) as con:
        champion = registry.load_champion(con)
        costs = dict(zip(champion.router.models, champion.router.costs, strict=True))
        assert con.execute("select price_snapshot from routers where router_id = $r",
                           {"r": built.router_id}).fetchone() == (expected,)
    assert champion.price_snapshot == expected and costs[models[0]] == 0.001
    publish(settings.db_path, settings.published_dir)
    assert rows(settings.db_path, "select price_snapshot from publications") == [(expected,)]
    routed = json.loads(_invoke("route", "solve for x", "--json").stdout)
    assert routed[0]["price_snapshot"] == expected
    published = serving._from_snapshot(settings.published_dir, "the store is busy (test)")
    assert published.price_snapshot == expected  # the snapshot answers with the same prices named
    retire(settings.db_path, models[1])
    with store.opened(settings.db_path, read_only=True) as con:
        assert registry.load_champion(con).price_snapshot == expected  # a retire changes no cost
