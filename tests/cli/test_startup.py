"""A command that needs no heavy stack loads none: `--help`, `status` on an empty home and a command's --help run
in a fresh interpreter, which reports every top-level package it imported."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# What no command that only talks or reads the store may pay for at start-up (seconds each on this machine).
HEAVY = {"torch", "onnxruntime", "mlflow", "prefect", "dask", "distributed", "sklearn", "scipy", "matplotlib",
         "sentence_transformers", "transformers", "tokenizers", "litellm"}
# And what `--help` has no use for at all: the data stack, the store, Rich's help formatter.
DATA = {"pandas", "numpy", "pyarrow", "duckdb", "rich"}

# Runs the command as `python -m uniroute` does, then prints the top-level packages imported, whatever the exit.
PROBE = """
import json, runpy, sys
sys.argv = ["uniroute", *sys.argv[1:]]
try:
    runpy.run_module("uniroute", run_name="__main__")
except SystemExit:
    pass
sys.stderr.write("\\nLOADED " + json.dumps(sorted({name.split(".")[0] for name in sys.modules})) + "\\n")
"""


def loaded_by(args: list[str], home: Path, **variables: str) -> tuple[set[str], subprocess.CompletedProcess]:
    """The top-level packages a fresh interpreter imported to run `uniroute ARGS` (and what it printed); variables:
    more UNIROUTE_ variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIROUTE_")}
    env.update(UNIROUTE_HOME=str(home), PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]),
               **variables)
    done = subprocess.run([sys.executable, "-c", PROBE, *args], env=env, capture_output=True, text=True, timeout=120)
    marker = done.stderr.rindex("\nLOADED ")
    return set(json.loads(done.stderr[marker + len("\nLOADED "):])), done


@pytest.mark.parametrize(("args", "forbidden"), [
    (["--help"], HEAVY | DATA),
    (["sql", "--help"], HEAVY | DATA),
    (["route", "--help"], HEAVY | DATA),
    (["status"], HEAVY),  # it reads the store: pandas and DuckDB are its work
])
def test_a_command_that_needs_no_heavy_stack_loads_none(args: list[str], forbidden: set[str], tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    loaded, done = loaded_by(args, home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "uniroute" in loaded and not loaded & forbidden, sorted(loaded & forbidden)
    if args == ["--help"]:  # every command is listed, none of their modules' dependencies imported
        assert all(name in done.stdout for name in ("ingest", "route", "onboard", "status", "evaluate", "models"))
    if args == ["status"]:
        assert "champion" in done.stdout and not any(home.iterdir())  # status creates nothing


def test_status_of_a_stored_pool_loads_no_heavy_stack(tmp_path: Path) -> None:
    # With a store to read (and MLflow on: it counts what MLflow has not logged yet from the store alone).
    from tests.helpers import ingest

    home = tmp_path / "home"
    home.mkdir()
    logs = tmp_path / "logs.csv"
    logs.write_text("prompt_id,prompt,model,score,cost\np1,one,m,1,0.5\np2,two,m,0,0.5\n")
    ingest(home / "uniroute.duckdb", logs, progress=False)
    loaded, done = loaded_by(["status"], home)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "pool       1 active: m" in done.stdout
    assert "uniroute" in loaded and not loaded & HEAVY, sorted(loaded & HEAVY)


def test_the_routing_path_loads_no_heavy_stack() -> None:
    # What `uniroute route` imports to answer one prompt: the operation, the registry of router kinds (every stored
    # router is read through it) and the default embedder; scipy alone once cost a second here.
    code = ("import json, sys\n"
            "import uniroute.operations.serving, uniroute.embed.static\n"
            "from uniroute.routers.kinds import kind_names\n"
            "kind_names()\n"
            "print(json.dumps(sorted({name.split('.')[0] for name in sys.modules})))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "uniroute" in loaded and not loaded & HEAVY, sorted(loaded & HEAVY)


# What a one-prompt `uniroute route` answered from the compact publication may not import: the data stack the store
# path reads the champion with, and the settings' pydantic-settings (Typer itself brings pydantic). The default
# embedder (static) needs its tokenizer and numpy alone.
ROUTE_FORBIDDEN = (HEAVY - {"tokenizers"}) | {"pandas", "pyarrow", "duckdb", "pydantic_settings", "sqlalchemy"}


def _ids_out(text: str) -> str:
    return re.sub(r"[0-9a-f]{32}", "ID", text)


def test_one_prompt_route_loads_no_data_stack_and_answers_as_the_store_path(tmp_path: Path,
                                                                           built_embedders_cache: Path) -> None:
    from tests.helpers import build, ingest, publish
    from uniroute.synth import write_synthetic_logs

    home = tmp_path / "home"
    home.mkdir()
    logs = write_synthetic_logs(tmp_path / "logs", n_prompts=200, n_models=4, n_topics=3, seed=1, with_split=True)
    ingest(home / "uniroute.duckdb", Path(logs.logs_path), progress=False)
    build(home / "uniroute.duckdb", "static", kinds=("kmeans_shrunk",), cache_dir=built_embedders_cache)
    publish(home / "uniroute.duckdb", home / "published")
    old = time.time() - 10  # a store file written within the last second is never taken as the quick path's key
    os.utime(home / "uniroute.duckdb", (old, old))
    prompt = "solve the equation for x"
    # The first route reads the store and keeps what it found; the second answers from the publication.
    for _ in range(2):
        loaded, done = loaded_by(["route", prompt, "--json"], home)
        assert done.returncode == 0, done.stderr[-2000:]
    assert "uniroute" in loaded and not loaded & ROUTE_FORBIDDEN, sorted(loaded & ROUTE_FORBIDDEN)
    # The same output as the store path's, which a UNIROUTE_ variable only Settings reads brings back.
    for args in (["route", prompt, "--json"], ["route", prompt, "other prompt", "--lambda", "0.5", "--json"],
                 ["route", prompt, "--pool", "synth-llm-00,synth-llm-02"], ["route", "  ", "--json"],
                 ["route", prompt, "--pool", "nobody"], ["route", prompt, "--no-log", "--lambda", "3"]):
        (quick, by_quick), (store, by_store) = (loaded_by(args, home),
                                                 loaded_by(args, home, UNIROUTE_SQL_TIMEOUT_SECONDS="30"))
        assert "duckdb" not in quick and "duckdb" in store, args
        assert (by_quick.returncode, _ids_out(by_quick.stdout)) == (by_store.returncode, _ids_out(by_store.stdout))
        assert by_quick.stderr.split("\nLOADED ")[0] == by_store.stderr.split("\nLOADED ")[0], args
