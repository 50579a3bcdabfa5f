"""A command that needs no heavy stack loads none: `--help`, `status` on an empty home and a command's --help run
in a fresh interpreter, which reports every top-level package it imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


def loaded_by(args: list[str], home: Path) -> tuple[set[str], subprocess.CompletedProcess]:
    """The top-level packages a fresh interpreter imported to run `uniroute ARGS` (and what it printed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNIROUTE_")}
    env.update(UNIROUTE_HOME=str(home), PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]))
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
