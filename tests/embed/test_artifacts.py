"""Model files built once into a cache folder: reuse, interruption, concurrent builders, stale leftovers."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from uniroute.embed import artifacts

RECIPE = {"source": "test", "setting": 1}


def write_model(folder: Path, text: str = "weights") -> None:
    """A builder: one small file, and a line in a shared log per call (so tests can count builds)."""
    (folder / "model.bin").write_text(text)
    log = os.environ.get("ARTIFACT_TEST_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()}\n")


def slow_write_model(folder: Path) -> None:
    time.sleep(1.0)
    write_model(folder)


def build_in_child(cache_dir: str, log: str) -> str:
    os.environ["ARTIFACT_TEST_LOG"] = log
    return artifacts.built_artifact(Path(cache_dir), "toy", RECIPE, slow_write_model).fingerprint


def test_built_once_then_reused(tmp_path: Path) -> None:
    calls = []

    def build(folder: Path) -> None:
        calls.append(folder)
        write_model(folder)

    first = artifacts.built_artifact(tmp_path, "toy", RECIPE, build)
    again = artifacts.built_artifact(tmp_path, "toy", RECIPE, build)
    assert len(calls) == 1 and first == again
    assert (first.path / "model.bin").read_text() == "weights"
    assert first.path.parent == tmp_path / "embedders" and first.recipe == RECIPE
    assert first.fingerprint == artifacts.files_fingerprint(first.path) and len(first.fingerprint) == 12
    # Another recipe is another folder; other bytes give another fingerprint.
    other = artifacts.built_artifact(tmp_path, "toy", {**RECIPE, "setting": 2}, lambda f: write_model(f, "other"))
    assert other.path != first.path and other.fingerprint != first.fingerprint
    assert [p.name for p in (tmp_path / "embedders").iterdir() if ".tmp-" in p.name] == []


def test_a_failed_build_leaves_nothing_and_the_next_one_builds(tmp_path: Path) -> None:
    def broken(folder: Path) -> None:
        (folder / "model.bin").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        artifacts.built_artifact(tmp_path, "toy", RECIPE, broken)
    assert sorted(p.name for p in (tmp_path / "embedders").iterdir() if not p.name.endswith(".lock")) == []
    built = artifacts.built_artifact(tmp_path, "toy", RECIPE, write_model)
    assert (built.path / "model.bin").read_text() == "weights"


def test_a_killed_builder_is_cleaned_up_by_the_next(tmp_path: Path) -> None:
    code = ("import sys, time; from pathlib import Path; from uniroute.embed import artifacts\n"
            "def build(folder):\n    (folder / 'model.bin').write_text('half'); print('building', flush=True); "
            "time.sleep(60)\n"
            f"artifacts.built_artifact(Path(sys.argv[1]), 'toy', {RECIPE!r}, build)\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert child.stdout.readline().strip() == "building"
    os.kill(child.pid, signal.SIGKILL)  # no cleanup runs: the lock dies with the process, the temp folder stays
    child.wait()
    assert [p for p in (tmp_path / "embedders").iterdir() if ".tmp-" in p.name]
    built = artifacts.built_artifact(tmp_path, "toy", RECIPE, write_model)
    assert (built.path / "model.bin").read_text() == "weights"
    assert [p for p in (tmp_path / "embedders").iterdir() if ".tmp-" in p.name] == []


def test_concurrent_builders_build_once(tmp_path: Path) -> None:
    log = tmp_path / "builds.log"
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        fingerprints = pool.starmap(build_in_child, [(str(tmp_path / "cache"), str(log))] * 2)
    assert len(set(fingerprints)) == 1
    assert len(log.read_text().split()) == 1  # the second process waited and reused the first one's build


def test_a_home_without_the_file_copies_the_environments_and_one_with_it_keeps_its_own(tmp_path: Path) -> None:
    environment = tmp_path / "environment"
    built = artifacts.built_artifact(environment, "toy", RECIPE, lambda f: write_model(f, "environment's"))
    assert built.files == ("model.bin",)
    (built.path / "model.bin.derived").write_text("a reader's own file beside the build")

    def never(folder: Path) -> None:
        raise AssertionError("built again although the environment has the file")

    home_cache = tmp_path / "home" / "cache"
    copied = artifacts.built_artifact(home_cache, "toy", RECIPE, never, environment=environment)
    assert copied.path.parent == home_cache / "embedders" and copied.fingerprint == built.fingerprint
    assert sorted(p.name for p in copied.path.iterdir()) == ["manifest.json", "model.bin"]  # the build's files only
    assert artifacts.built_artifact(home_cache, "toy", RECIPE, never, environment=None) == copied  # the home's now
    # Another recipe is not the environment's file: it is built into the home.
    other = artifacts.built_artifact(home_cache, "toy", {**RECIPE, "setting": 2}, write_model, environment=environment)
    assert other.path.parent == home_cache / "embedders" and other.fingerprint != built.fingerprint
    # A home that built its own file before keeps it (its routers' ids name that fingerprint).
    own = artifacts.built_artifact(tmp_path / "older home", "toy", RECIPE, lambda f: write_model(f, "its own"))
    again = artifacts.built_artifact(tmp_path / "older home", "toy", RECIPE, never, environment=environment)
    assert again == own and own.fingerprint != built.fingerprint


def test_an_environment_manifest_without_its_files_is_built_instead(tmp_path: Path) -> None:
    environment = tmp_path / "environment"
    built = artifacts.built_artifact(environment, "toy", RECIPE, lambda f: write_model(f, "environment's"))
    manifest = json.loads((built.path / artifacts.MANIFEST).read_text())
    del manifest["files"]  # as written before builds listed their files
    (built.path / artifacts.MANIFEST).write_text(json.dumps(manifest))
    home = artifacts.built_artifact(tmp_path / "cache", "toy", RECIPE, write_model, environment=environment)
    assert home.fingerprint != built.fingerprint and (home.path / "model.bin").read_text() == "weights"
