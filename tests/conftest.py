"""Shared fixtures: isolated state folders (the session's home too), the shared datasets, single-threaded numerics."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests import home_guard, needs

# Before anything reads the settings (the offline environment below points PREFECT_HOME under the home): a test
# that forgets its own home writes into this session's temporary one, never into the repository's .uniroute/.
home_guard.isolate_home()

from uniroute.settings import Settings, apply_offline_environment  # noqa: E402 - after the home is isolated

# Tests never reach the network, and numerics stay single-threaded (the cores are shared).
apply_offline_environment()
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# An onboarding logs its MLflow run before it returns: a test checks MLflow right after it, and no detached
# follow-up outlives its test's home (tests/cli/test_mlflow_after.py runs the background follow-up itself).
os.environ.setdefault("UNIROUTE_MLFLOW_BACKGROUND", "false")
# A file a test drops into an inbox or a spool is whole before the inbox runs: the 2 s the product waits for a file
# copied in place to stand still only idled a worker (about 2 s per inbox run, 38 s of tests/pipeline/ alone). The
# wait itself is tested with its own values (tests/ingest/test_inbox_safety.py, test_inbox_parts.py,
# tests/robustness/test_hostile_records.py); runs that take a user's environment (`make run`) keep the default.
os.environ.setdefault("UNIROUTE_INBOX_SETTLE_SECONDS", "0.05")

# ../shared/datasets beside the repository; UNIROUTE_TEST_SHARED_DATASETS points elsewhere (tests/test_needs.py
# points it at a missing folder to prove a CI run then fails rather than skips).
SHARED_DATASETS = Path(os.environ.get("UNIROUTE_TEST_SHARED_DATASETS")
                       or Path(__file__).resolve().parent.parent.parent / "shared" / "datasets")


# Tests that use a costly session fixture run on one xdist worker (--dist loadgroup), so it is built once; the
# plugin puts each group in the test's id, where xdist's scheduler reads it (xdist 3.8 no longer can on pytest 9).
pytest_plugins = ("tests.xdist_groups", "tests.fixture_order")
GROUPS = {"prefect_harness": "prefect", "built_embedders_cache": "embedders"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Put each test in its xdist group: `serial`-marked tests together, then by the costly fixture it uses."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        if item.get_closest_marker("serial"):
            # One on the session's Prefect API joins that group, which runs one test at a time as well: in a group
            # of its own it started a second Prefect server on the other worker (20-45 s of the suite).
            item.add_marker(pytest.mark.xdist_group("prefect" if "prefect_harness" in item.fixturenames else "serial"))
            continue
        group = next((g for fixture, g in GROUPS.items() if fixture in item.fixturenames), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """The random order's seed, even under -q (which hides the header): a failure that depends on order repeats."""
    if not config.pluginmanager.hasplugin("random_order"):
        return
    from random_order.config import Config

    order = Config(config)
    if order.is_enabled and order.bucket_type != "none":
        terminalreporter.write_line(f"random order seed {order.seed} (repeat it with --random-order-seed={order.seed}; "
                                    "--random-order-bucket=none keeps the written order)")


def pytest_configure(config: pytest.Config) -> None:
    """With CI=true, refuse to start (one line) when a shared dataset, pinned dependency or program is missing."""
    given = [Path(arg.split("::")[0]) for arg in config.args]
    needs.check_ci(SHARED_DATASETS, [Path(__file__).parent, *(p for p in given if p.exists())])
    home_guard.pytest_configure(config)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A fresh UNIROUTE_HOME."""
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def settings(home: Path) -> Settings:
    return Settings(home=home, shared_datasets=SHARED_DATASETS)


@pytest.fixture
def db_path(home: Path) -> Path:
    return home / "uniroute.duckdb"


@pytest.fixture(scope="session")
def empty_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store file as its first open leaves it (schema, version, shape record), made once per worker: a test that
    starts from an empty store copies it (a few ms) instead of paying DuckDB's DDL again (~0.15 s CPU). The first
    open itself is tested where it is the subject (tests/store/, tests/cli/, tests/robustness/)."""
    from uniroute import store

    path = tmp_path_factory.mktemp("empty_store") / "uniroute.duckdb"
    store.connect(path).close()
    return path


def copy_of_empty_store(empty_store: Path, to: Path) -> Path:
    """A fresh store at `to`: a copy of the session's empty one (the closed file alone: no WAL, no dataset)."""
    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(empty_store, to)
    return to


@pytest.fixture(scope="session")
def built_embedders_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache folder for the whole run. The default static and ONNX model files are copied into it from the
    environment (`make env` built them); what it lacks (another quantisation) is built into it once.

    Under xdist the workers share it (their temporary roots sit in one folder): the library's build lock makes a
    second worker wait for the first's file instead of building its own (uniroute/embed/artifacts.py)."""
    root = tmp_path_factory.getbasetemp()
    path = (root.parent if os.environ.get("PYTEST_XDIST_WORKER") else root) / "built_embedders"
    path.mkdir(exist_ok=True)
    return path


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    return needs.folder(SHARED_DATASETS, "the shared datasets")


@pytest.fixture(scope="session")
def prefect_harness(tmp_path_factory):
    """One real Prefect server for the whole session, started as `make run` and `make serve` start theirs (`prefect
    server start` with its trigger service, its database copied from the environment's template: Prefect's own test
    harness migrated a new database, 10 CPU-seconds more). The session's clients talk to it through Prefect's settings,
    as under that harness; a subprocess is given its URL."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    from deployments.serve import prefect_server

    settings = Settings(home=tmp_path_factory.mktemp("prefect_server") / "home")
    os.environ["PREFECT_HOME"] = str(settings.prefect_home)
    with prefect_server(settings, settings.home / "prefect-server.log") as url, \
            temporary_settings(updates={PREFECT_API_URL: url}):
        yield url
