"""Bad arguments and bad files on the command line: one line on stderr that says what is wrong, exit code 1,
and the store's data unchanged (the operations log records a failed run; that is its job)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from tests.robustness.conftest import NEWCOMER, table_checksums
from uniroute.cli import app

runner = CliRunner()


def _files(tmp: Path, logs: pd.DataFrame) -> dict[str, Path]:
    """Inputs the cases below point at."""
    loop = tmp / "loop.csv"
    os.symlink(loop, loop)  # a link to itself
    bad_jsonl = tmp / "prompts_bad.jsonl"
    bad_jsonl.write_text('{"prompt": "fine"}\n{not json\n')
    no_prompt = tmp / "prompts.csv"
    no_prompt.write_text("text\nhello\n")
    nan_only = tmp / "nan_only.csv"
    rows = logs[logs.model == NEWCOMER].head(5).assign(score=float("nan"))
    rows.drop(columns=["split"]).to_csv(nan_only, index=False)
    (tmp / "folder.csv").mkdir()
    return {"loop": loop, "bad_jsonl": bad_jsonl, "no_prompt": no_prompt, "nan_only": nan_only,
            "folder": tmp / "folder.csv", "missing": tmp / "missing.csv"}


# (arguments with {name} placeholders for the files above, the one line it must print)
CASES = {
    "empty prompt": (["route", ""], r"prompt 1 is empty"),
    "blank second prompt": (["route", "fine", "   "], r"prompt 2 is empty"),
    "no prompt": (["route"], r"no prompt given"),
    "budget above 1": (["route", "x", "--budget", "2"], r"budget must be in \(0, 1\].*not 2\.0"),
    "budget 0": (["route", "x", "--budget", "0"], r"budget must be in \(0, 1\]"),
    "negative budget": (["route", "x", "--budget", "-0.5"], r"budget must be in \(0, 1\]"),
    "NaN budget": (["route", "x", "--budget", "nan"], r"budget must be in \(0, 1\].*nan"),
    "negative lambda": (["route", "x", "--lambda", "-1"], r"lambda must be a finite number >= 0"),
    "infinite lambda": (["route", "x", "--lambda", "inf"], r"lambda must be a finite number >= 0"),
    "lambda and budget": (["route", "x", "--lambda", "1", "--budget", "0.5"], r"not both"),
    "negative max cost": (["route", "x", "--max-cost", "-1"], r"max cost must be a finite number >= 0.*not -[12]"),
    "max cost below the cheapest": (["route", "x", "--max-cost", "1e-12"],
                                    r"max cost 1e-12 is below the cheapest pool model's cost .* \((synth-llm-|cheap)"),
    "max cost and lambda": (["route", "x", "--lambda", "1", "--max-cost", "1"],
                            r"give a max cost or a lambda, not both"),
    "unknown pool model": (["route", "x", "--pool", "nobody"], r"\['nobody'\] are not in the pool of router"),
    "empty pool": (["route", "x", "--pool", " , "], r"the pool is empty"),
    "prompts file missing": (["route", "--file", "{missing}"], r"cannot read the prompts"),
    "prompts file not JSON": (["route", "--file", "{bad_jsonl}"], r"line 2 is not JSON"),
    "prompts CSV without prompt": (["route", "--file", "{no_prompt}"], r"needs a `prompt` column"),
    "prompts as text and file": (["route", "x", "--file", "{bad_jsonl}"], r"not both"),
    "ingest a missing file": (["ingest", "{missing}"], r"missing\.csv: no such file"),
    "ingest an empty folder": (["ingest", "{folder}"], r"folder\.csv is a folder with no file to ingest"),
    "ingest a symlink loop": (["ingest", "{loop}"], r"loop\.csv: cannot open: Too many levels of symbolic links"),
    "ingest a device": (["ingest", "/dev/null"], r"/dev/null: not a regular file"),
    "ingest with a bad split": (["ingest", "{missing}", "--split", "validation"], r"--split must be train, val"),
    "onboard NaN-only results": (["onboard", "--results", "{nan_only}"],
                                 r"no valid results in .*nan_only\.csv: nothing to onboard \(nan_only\.csv: 5 rows "
                                 r"quarantined, row 1: .*score"),
    "onboard a missing file": (["onboard", "--results", "{missing}"], r"missing\.csv: no such file"),
    "retire an unknown model": (["retire", "nobody"], r"no model 'nobody' in the store"),
    "retire a near miss": (["retire", "synth-llm-0"], r"did you mean \['synth-llm-0"),
    "set-cost of an unknown model": (["models", "set-cost", "nobody", "1"], r"unknown model 'nobody'"),
    "negative cost": (["models", "set-cost", "--", "synth-llm-00", "-1"],
                      r"must be a finite number in \[0, 1e\+06\], not -1"),
    "SQL timeout of 0": (["sql", "select 1", "--timeout", "0"], r"--timeout must be a number of seconds > 0"),
    "zero trials": (["evaluate", "--data", "{missing}", "--out", "{missing}", "--trials", "0"],
                    r"--trials must be >= 1"),
    "no battles per prompt": (["evaluate", "--data", "{missing}", "--out", "{missing}", "--methods", "pairwise",
                               "--battles-per-prompt", "0"], r"--battles-per-prompt must be >= 1, got 0"),
    "battles without pairwise": (["evaluate", "--data", "{missing}", "--out", "{missing}", "--methods", "kmeans",
                                  "--battles-per-prompt", "3"], r"--battles-per-prompt draws .*add pairwise"),
    "evaluate a missing file": (["evaluate", "--data", "{missing}", "--out", "{missing}"], r"no such file"),
    "build with the attributes embedder": (["build", "--embedder", "attributes"],
                                           r"attributes embedder is for evaluation only.*build with one of minilm"),
    "build with an unknown embedder": (["build", "--embedder", "nope"], r"unknown embedder 'nope'"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_bad_arguments_get_one_line_and_change_no_data(pool, logs, tmp_path, case):
    args, pattern = CASES[case]
    files = _files(tmp_path, logs)
    args = [a.format(**files) for a in args]
    before = table_checksums(pool.db_path)
    result = runner.invoke(app, args, catch_exceptions=False)
    assert result.exit_code == 1, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert re.search(pattern, lines[0]), lines[0]
    assert table_checksums(pool.db_path) == before


def test_a_retired_model_is_refused_by_route_and_leaves_the_published_tables(pool):
    retired = runner.invoke(app, ["retire", "synth-llm-01"], catch_exceptions=False)
    assert retired.exit_code == 0, retired.output
    routed = runner.invoke(app, ["route", "x", "--pool", "synth-llm-01"], catch_exceptions=False)
    assert routed.exit_code == 1
    assert "['synth-llm-01'] are retired and out of the pool" in routed.stderr
    published = runner.invoke(app, ["sql", "select distinct model from current_routing_table", "--json"])
    assert "synth-llm-01" not in published.stdout and published.exit_code == 0


def test_an_empty_store_says_what_to_do_first(tmp_path, monkeypatch):
    monkeypatch.setenv("UNIROUTE_HOME", str(tmp_path / "empty"))
    for args, pattern in ((["route", "x"], r"no store at .*: run `uniroute ingest`"),
                          (["build"], r"0 active models with costs and 0 prompts"),
                          (["publish"], r"no champion router in the store: run `uniroute build` first"),
                          (["route", "x"], r"no champion router in the store: run `uniroute build` first")):
        result = runner.invoke(app, args, catch_exceptions=False)
        assert result.exit_code == 1 and re.search(pattern, result.stderr), (args, result.output)
