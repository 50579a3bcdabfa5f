"""The crash harness: each operation killed at each named step (as kill -9 would: os._exit, no cleanup), run
again, then `uniroute doctor`; afterwards every invariant holds, no row is lost and no table is partial.

Named steps are `uniroute.faults.crashpoint` calls; UNIROUTE_CRASH_AT chooses one for a run. A slow test
kills real processes with SIGKILL at random moments instead.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.robustness.conftest import NEWCOMER
from uniroute import store
from uniroute.faults import CRASH_ENV, CRASH_SIGNAL
from uniroute.pipeline.pool import registry
from uniroute.pipeline.reconcile import reconcile
from uniroute.pipeline.serving import snapshot
from uniroute.pipeline.tracking.relocate import relocate_tracking_store
from uniroute.routers.kinds import kind_names, router_kind
from uniroute.settings import Settings

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _env(settings: Settings, mlflow: bool) -> dict[str, str]:
    env = {**os.environ, "UNIROUTE_HOME": str(settings.home), "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1",
           "UNIROUTE_MLFLOW": str(mlflow).lower()}
    env.pop(CRASH_ENV, None)
    return env


def _cli(settings: Settings, *args: str, crash_at: str | None = None, mlflow: bool = False,
         timeout: float = 300) -> subprocess.CompletedProcess:
    env = _env(settings, mlflow)
    if crash_at is not None:
        env[CRASH_ENV] = crash_at
    return subprocess.run([sys.executable, "-m", "uniroute", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO)


def _inputs(settings: Settings, logs: pd.DataFrame, folder: Path) -> dict[str, Path]:
    """The newcomer's validation results, and new training results of a known model, as files."""
    with store.opened(settings.db_path, read_only=True) as con:
        val = set(con.execute("select prompt_id from prompt_splits where split = 'val'").df().prompt_id)
    newcomer = logs[(logs.model == NEWCOMER) & logs.prompt_id.isin(val)].drop(columns=["split"])
    newcomer.to_csv(folder / "newcomer_val.csv", index=False)
    fresh = logs[logs.model == "synth-llm-00"].head(40).assign(
        prompt_id=lambda f: "extra-" + f.prompt_id, model="synth-llm-00")
    fresh.to_csv(folder / "extra.csv", index=False)
    return {"newcomer": folder / "newcomer_val.csv", "extra": folder / "extra.csv"}


def _counts(settings: Settings) -> dict[str, int]:
    with store.opened(settings.db_path, read_only=True) as con:
        return {t: con.execute(f"select count(*) from {t}").fetchone()[0]
                for t in ("results", "prompts", "ingested_files", "routers", "publications")}


def _assert_whole(settings: Settings, mlflow: bool = False) -> None:
    """Repair with doctor, then check every invariant and that nothing is partial."""
    tracking = (settings.mlflow_uri, settings.mlflow_artifacts) if mlflow else (None, None)
    with store.session(settings.db_path, "doctor") as s:
        reconcile(s, settings.published_dir, *tracking, settings.inbox_dir)
    with store.session(settings.db_path, "doctor") as s:
        report = reconcile(s, settings.published_dir, *tracking, settings.inbox_dir, repair=False)
        versions = set(store.query(s.con, "publication_versions").version)
        champion = registry.load_champion(s.con)
        unfinished = store.query(s.con, "operations_unfinished").query("op_id != @s.op_id")
    assert report.healthy, report.lines()
    assert all(f.status == "ok" for f in report.findings), report.lines()
    assert unfinished.empty
    # No partial tables: every recorded version has a complete folder that passes its checksum.
    for version in versions:
        snapshot.read_snapshot(settings.published_dir / version)
    assert {p.name for p in settings.published_dir.iterdir() if p.name != "current"} == versions
    current = snapshot.read_current(settings.published_dir)
    assert current.version == max(versions, key=lambda v: v)  # versions sort by time
    assert champion.router_id  # a champion exists and loads


@pytest.fixture(scope="module")
def mlflow_template(pool_template, tmp_path_factory) -> Path:
    """The pool with its MLflow lineage logged once per module, not from scratch by every MLflow case."""
    home = tmp_path_factory.mktemp("mlflow_pool") / "home"
    shutil.copytree(pool_template[0], home, symlinks=True)
    settings = Settings(home=home)
    with store.session(settings.db_path, "doctor") as s:
        reconcile(s, settings.published_dir, settings.mlflow_uri, settings.mlflow_artifacts, settings.inbox_dir)
    return home


@pytest.fixture
def mlflow_pool(mlflow_template, tmp_path_factory, monkeypatch) -> Settings:
    """A private copy of the MLflow pool, its tracking store pointed at the copy as `uniroute doctor` does for a
    restored backup (MLflow records absolute paths), so the crashed run starts from a home logged in place."""
    home = tmp_path_factory.mktemp("home")
    shutil.copytree(mlflow_template, home, symlinks=True, dirs_exist_ok=True)
    settings = Settings(home=home)
    assert relocate_tracking_store(settings.mlflow_uri, settings.mlflow_artifacts)
    monkeypatch.setenv("UNIROUTE_HOME", str(home))
    return settings


# (command with {newcomer}/{extra} placeholders, crash point, what must hold after the rerun, with MLflow?)
# MLflow only where the crash point is in its part; those cases start from a home whose lineage MLflow holds, so
# the killed run is the newcomer's own logging (`mlflow_pool`).
CRASHES = {
    "ingest before commit": (["ingest", "{extra}"], "ingest:written", "extra", False),
    "inbox before commit": (["inbox", "--no-onboard"], "ingest:written", "inbox", False),
    "inbox after commit, before done/": (["inbox", "--no-onboard"], "inbox:committed", "inbox", False),
    "onboard after embedding": (["onboard", "--results", "{newcomer}"], "onboard:embedded", "newcomer", False),
    "onboard before commit": (["onboard", "--results", "{newcomer}"], "onboard:written", "newcomer", False),
    "onboard while MLflow registers": (["onboard", "--results", "{newcomer}"], "mlflow:registered", "newcomer",
                                       True),
    "onboard before the MLflow alias": (["onboard", "--results", "{newcomer}"], "mlflow:champion-alias",
                                        "newcomer", True),
    "build after embedding": (["build", "--embedder", "tfidf"], "build:embedded", "build", False),
    "build before commit": (["build", "--embedder", "tfidf"], "build:written", "build", False),
    "publish after writing the folder": (["publish", "--force"], "publish:folder-written", "publish", False),
    "publish before commit": (["publish", "--force"], "publish:recorded", "publish", False),
    "publish before switching current": (["publish", "--force"], "publish:before-switch", "publish-committed",
                                         False),
    "retire before its publication commits": (["retire", "synth-llm-01"], "publish:recorded", "retire", False),
    "retire before switching current": (["retire", "synth-llm-01"], "publish:before-switch", "retire", False),
}


# The MLflow cases share one worker under xdist (`mlflow_template` is then logged once, not once per worker).
@pytest.mark.parametrize("case", [pytest.param(case, marks=[pytest.mark.xdist_group("crashes_mlflow")] * mlflow)
                                  for case, (*_, mlflow) in CRASHES.items()])
def test_an_operation_killed_at_a_step_recovers_whole(request, logs, tmp_path, case):
    args, point, expect, mlflow = CRASHES[case]
    pool = request.getfixturevalue("mlflow_pool" if mlflow else "pool")
    files = _inputs(pool, logs, tmp_path)
    args = [a.format(**files) for a in args]
    if expect == "inbox":
        pool.inbox_dir.mkdir(parents=True, exist_ok=True)
        files["extra"].rename(pool.inbox_dir / "extra.csv")
    before = _counts(pool)
    champion_before = _champion_id(pool)

    crashed = _cli(pool, *args, crash_at=point, mlflow=mlflow)
    assert crashed.returncode == -CRASH_SIGNAL, (crashed.returncode, crashed.stdout, crashed.stderr)  # killed by it
    again = _cli(pool, *args, mlflow=mlflow)
    assert again.returncode == 0, again.stderr
    if expect == "inbox":  # a file left in .processing/ by the killed run is finished by the next one
        assert (pool.inbox_dir / "done" / "extra.csv").exists()
    _assert_whole(pool, mlflow)

    after = _counts(pool)
    if expect in ("extra", "inbox"):  # the 40 new results landed exactly once: none lost, none doubled
        assert after["results"] == before["results"] + 40 and after["ingested_files"] == before["ingested_files"] + 1
    if expect == "newcomer":
        assert NEWCOMER in _champion(pool).router.models
    if expect == "build":
        # one version per candidate kind (the served one, the others beside it)
        kinds = [k for k in kind_names() if not router_kind(k).quality_only]  # the synthetic pool has costs
        assert after["routers"] == before["routers"] + len(kinds) and _champion_id(pool) != champion_before
    if expect == "publish":  # killed before its commit: only the rerun's version is recorded
        assert after["publications"] == before["publications"] + 1
    if expect == "publish-committed":  # killed after it: both versions stand, `current` names the newer
        assert after["publications"] == before["publications"] + 2
    if expect == "retire":
        assert "synth-llm-01" not in snapshot.read_current(pool.published_dir).manifest["pool"]


def _champion(settings: Settings) -> registry.RouterVersion:
    with store.opened(settings.db_path, read_only=True) as con:
        return registry.load_champion(con)


def _champion_id(settings: Settings) -> str:
    return _champion(settings).router_id


def _killed_at(settings: Settings, args: list[str], env: dict[str, str], moment: float) -> bool:
    """Run a command, and kill -9 it `moment` seconds after its operation takes the store; whether it was killed
    (it may finish first). A kill must end the process by SIGKILL itself, nothing else."""
    proc = subprocess.Popen([sys.executable, "-m", "uniroute", *args], env=env, cwd=REPO,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while proc.poll() is None and store.current_holder(settings.db_path) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(moment)
    if proc.poll() is not None:
        assert proc.returncode == 0, (args, proc.returncode)
        return False
    os.kill(proc.pid, signal.SIGKILL)
    returncode = proc.wait(timeout=60)
    # The process may exit between poll() and kill(): a zombie takes the signal but keeps its own exit status.
    # That is a finish, not a kill; anything else than a clean finish or SIGKILL itself is a failure.
    assert returncode in (0, -signal.SIGKILL), (args, returncode)
    return returncode == -signal.SIGKILL


def test_sigkill_at_random_moments_then_a_rerun_leaves_the_pool_whole(pool, logs, tmp_path):
    """Real kill -9 of onboarding, publishing and building at seeded random moments inside the operation, each
    followed by a rerun; a moment the operation outlives is retried sooner, so every operation is killed."""
    files = _inputs(pool, logs, tmp_path)
    rng = np.random.default_rng(7)
    env = _env(pool, mlflow=False)
    plan = [["onboard", "--results", str(files["newcomer"])], ["build", "--embedder", "tfidf"],
            ["publish", "--force"]]
    for args in plan:
        moment = float(rng.uniform(0.0, 2.0))
        for _ in range(6):
            if _killed_at(pool, args, env, moment):
                break
            moment /= 4
        else:
            pytest.fail(f"{args[0]} always finished before its kill: the test killed nothing")
        rerun = _cli(pool, *args)
        assert rerun.returncode == 0, (args, rerun.stderr)
    _assert_whole(pool)
    assert NEWCOMER in _champion(pool).router.models
