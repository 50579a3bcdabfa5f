"""`make run`'s demo end to end, as a user runs it: the whole story completes and the output has no noise."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from deployments.demo import DEMO_MARKER, KEPT_DECISIONS, fresh_home, pin_build_embedder, why_one_model
from tests.log_noise import noisy_logs
from uniroute import settings as settings_module
from uniroute.settings import Settings

ROOT = Path(__file__).resolve().parents[2]


def test_make_runs_builds_embed_with_the_interactive_embedder_whatever_the_build_default(monkeypatch) -> None:
    # make run must stay within its minutes when the nightly builds' default is a slower embedder.
    for name in ("UNIROUTE_EMBEDDER", "UNIROUTE_BUILD_EMBEDDER"):  # unset, and unset again after the test
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setattr(settings_module, "DEFAULT_BUILD_EMBEDDER", "minilm-onnx")
    assert Settings().build_embedder_name == "minilm-onnx"
    pin_build_embedder(Settings())
    assert Settings().build_embedder_name == "static" == Settings().embedder
    monkeypatch.setenv("UNIROUTE_BUILD_EMBEDDER", "minilm-onnx")  # a demo told otherwise keeps what it was told
    pin_build_embedder(Settings())
    assert Settings().build_embedder_name == "minilm-onnx"


def test_one_model_taking_every_prompt_is_explained_in_one_sentence() -> None:
    tiny = "K = 2 was tuned on 298 validation prompts: too few validation answers to tell more topics apart"
    assert why_one_model("gpt-4", tiny) == f"every prompt went to gpt-4 at the default setting: {tiny}"
    said = why_one_model("gpt-4", None)
    assert said.startswith("every prompt went to gpt-4 at the default setting: no cheaper published setting keeps 90%")
    assert "\n" not in said


@pytest.mark.slow
def test_make_run_tells_the_whole_story_without_log_noise(tmp_path: Path, built_embedders_cache: Path) -> None:
    """The event-triggered onboarding completes, and no warning or distributed INFO line reaches the user."""
    # The static table as a second `make run` finds it (the demo keeps cache/): distilling it again here took a
    # minute of the suite's critical path. A cold `make run` is what benchmarks/speed/make_run_silence.py times.
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "cache").symlink_to(built_embedders_cache, target_is_directory=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "UNIROUTE_", "MLFLOW_"))}
    env.update(UNIROUTE_HOME=str(tmp_path / "home"), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-m", "deployments.demo"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    # The event-triggered run is the one that onboards (a child router version), not the reconciliation at the
    # start of some flow: its line names the newcomer and the child version, and nothing was "already routable".
    event_line = next(line for line in output.splitlines() if line.startswith("event -> onboarding run"))
    assert "Completed" in event_line and "onboarded " in event_line and " -> " in event_line, event_line
    assert "already routable" not in output and "repaired pool" not in output
    assert "1. Benchmark logs land in the inbox" in output and "inbox: benchmark_logs.parquet" in output
    assert "router kinds compared on validation prompts" in output
    # The batch goes through the gateway (the OpenAI client, local test backends) at the default setting, none
    # fails, and more than one model answers it, or one sentence says why not.
    assert "routed at the default budget" in output
    chosen = next(line for line in output.splitlines() if line.startswith("300 answers in"))
    assert ", 0 failed;" in chosen and ("," in chosen.split("answered by:")[1] or "every prompt went to" in output)
    assert "stopped the gateway (exit 0)" in output and "decision file(s) of the gateway's spool ingested" in output
    assert "embedding the new prompts with static" in output  # the interactive embedder, whatever builds default to
    noisy = [line for line in output.splitlines()
             if "Warning" in line or "warnings.warn" in line or "| distributed." in line
             or "Starting temporary server" in line or "WARNING" in line or "Traceback" in line]
    assert not noisy, noisy[:10]
    # The logs of what it started (the Prefect server, the onboarding runner and the flow run it launched): the
    # runner's stop at the end used to leave an asyncio CancelledError traceback there.
    logs = tmp_path / "home" / "logs"
    assert {p.name for p in logs.glob("*.log")} == {"prefect-server.log", "onboarding-runner.log", "gateway.log"}
    assert noisy_logs(logs) == {}
    # Each line the library logged to a flow run says something new (the learned map's half maps read as one
    # line logged twice): the run logs the Prefect server kept.
    with sqlite3.connect(tmp_path / "home" / "prefect" / "prefect.db") as db:
        lines = db.execute("select flow_run_id, message from log where name = ?",
                           ["uniroute.routers.cluster.learned_map"]).fetchall()
    assert lines and len(lines) == len(set(lines)), lines


def test_make_run_refuses_a_home_it_did_not_create_in_one_line_that_says_what_to_do(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    settings.home.mkdir()
    (settings.home / "uniroute.duckdb").write_bytes(b"someone's store")
    settings.spool_dir.mkdir(parents=True)
    (settings.spool_dir / "decisions-1.jsonl").write_text("{}\n")
    with pytest.raises(SystemExit) as refused:
        fresh_home(settings)
    message = str(refused.value.code)
    assert "\n" not in message and "did not create" in message
    assert f"mv {settings.home} {settings.home}.old" in message and "UNIROUTE_HOME=" in message
    assert (settings.home / "uniroute.duckdb").read_bytes() == b"someone's store"  # nothing wiped


def test_make_run_reuses_a_home_that_holds_only_what_a_route_spooled(tmp_path: Path, capsys) -> None:
    # `uniroute route` (or a served model) without a home leaves only its decision records in .uniroute/.
    settings = Settings(home=tmp_path / "home")
    settings.spool_dir.mkdir(parents=True)
    (settings.spool_dir / "decisions-1.jsonl").write_text('{"decision_id": "a"}\n')
    (settings.spool_dir / "decisions-2.jsonl.part").write_text('{"decision_id": "b"}\n')
    (settings.cache_dir / "static").mkdir(parents=True)
    fresh_home(settings)
    assert "reusing" in capsys.readouterr().out
    kept = settings.home / KEPT_DECISIONS
    assert sorted(p.name for p in kept.iterdir()) == ["decisions-1.jsonl", "decisions-2.jsonl.part"]
    assert not settings.spool_dir.exists()  # the demo's own traffic starts from an empty spool
    assert (settings.home / DEMO_MARKER).exists() and (settings.cache_dir / "static").is_dir()
    (settings.home / "uniroute.duckdb").write_bytes(b"the demo's store")
    fresh_home(settings)  # a rerun wipes what the demo made, and keeps the records and the cache
    assert not (settings.home / "uniroute.duckdb").exists()
    assert (kept / "decisions-1.jsonl").exists() and (settings.cache_dir / "static").is_dir()
