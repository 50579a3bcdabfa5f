"""New homes' MLflow tracking stores start from the environment's empty, migrated one (uniroute/pipeline/tracking/
empty_store.py, deployments/mlflow_template.py): the copy is whole or absent, never replaces a store, is what the
first sync and `make serve`'s UI find, and the template is at MLflow's newest revision with nothing of ours in it."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from deployments import serve
from deployments.mlflow_template import make_template
from uniroute import environment, store
from uniroute.pipeline.tracking import empty_store
from uniroute.pipeline.tracking.client import tracking_store
from uniroute.pipeline.tracking.sync import sync_mlflow
from uniroute.settings import Settings


@pytest.fixture
def template(tmp_path: Path, migrated_db: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A template marked as ours: a store made from it holds the marker table."""
    path = tmp_path / "template.db"
    shutil.copyfile(migrated_db, path)
    with closing(sqlite3.connect(path)) as con, con:
        con.execute("create table marker (what text)")
    monkeypatch.setattr(empty_store, "tracking_store_template", lambda: path)
    return path


def _tables(db: Path) -> set[str]:
    with closing(sqlite3.connect(f"file:{db}?immutable=1", uri=True)) as con:
        return {row[0] for row in con.execute("select name from sqlite_master where type = 'table'")}


def _default_location(db: Path) -> str:
    with closing(sqlite3.connect(f"file:{db}?immutable=1", uri=True)) as con:
        return con.execute("select artifact_location from experiments where experiment_id = 0").fetchone()[0]


def test_a_new_home_gets_a_copy_and_a_home_with_a_store_keeps_it(settings: Settings, template: Path) -> None:
    assert empty_store.seed_tracking_store(settings.mlflow_uri, settings.mlflow_artifacts)
    db = settings.home / "mlflow.db"
    assert "marker" in _tables(db) and _default_location(db) == (settings.mlflow_artifacts.resolve() / "0").as_uri()
    with closing(sqlite3.connect(db)) as con, con:
        con.execute("insert into marker values ('the home''s own')")
    assert not empty_store.seed_tracking_store(settings.mlflow_uri, settings.mlflow_artifacts)
    with closing(sqlite3.connect(db)) as con:
        assert con.execute("select what from marker").fetchall() == [("the home's own",)]
    assert [p.name for p in settings.home.iterdir()] == ["mlflow.db"]  # no part file left
    assert not empty_store.seed_tracking_store("http://127.0.0.1:5000", settings.mlflow_artifacts)  # not a file


def test_without_a_template_mlflow_makes_the_store_as_before(settings: Settings, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(empty_store, "tracking_store_template", lambda: tmp_path / "none.db")
    assert not empty_store.seed_tracking_store(settings.mlflow_uri, settings.mlflow_artifacts)
    assert not (settings.home / "mlflow.db").exists()


def test_a_copy_that_fails_halfway_leaves_no_store(settings: Settings, template: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def half_then_full_disk(source: Path, target: Path) -> None:
        Path(target).write_bytes(Path(source).read_bytes()[:4096])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(empty_store.shutil, "copyfile", half_then_full_disk)
    with pytest.raises(OSError, match="No space"):
        empty_store.seed_tracking_store(settings.mlflow_uri, settings.mlflow_artifacts)
    assert list(settings.home.iterdir()) == []


def test_a_store_made_meanwhile_by_another_process_stays(settings: Settings, template: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    real_copy = shutil.copyfile

    def copy_while_another_makes_the_store(source: Path, target: Path) -> None:
        (settings.home / "mlflow.db").write_text("another process's store")
        real_copy(source, target)

    monkeypatch.setattr(empty_store.shutil, "copyfile", copy_while_another_makes_the_store)
    assert not empty_store.seed_tracking_store(settings.mlflow_uri, settings.mlflow_artifacts)
    assert (settings.home / "mlflow.db").read_text() == "another process's store"
    assert [p.name for p in settings.home.iterdir()] == ["mlflow.db"]


def test_the_first_sync_and_make_serves_ui_start_from_the_template(settings: Settings, tmp_path: Path,
                                                                   template: Path) -> None:
    with store.session(settings.db_path, "test") as s:
        sync_mlflow(s.con, settings.mlflow_uri, settings.mlflow_artifacts)
    assert "marker" in _tables(settings.home / "mlflow.db")
    other = Settings(home=tmp_path / "other")
    serve.mlflow_ui_command(other, 5000)  # what `make status` and `make stop` build too: no store made
    assert not (other.home / "mlflow.db").exists()
    serve.seed_new_home(other, "mlflow-ui")  # before `make serve` and `make run` start the UI
    assert "marker" in _tables(other.home / "mlflow.db")


def test_a_filesystem_without_hard_links_leaves_the_store_to_mlflow(settings: Settings, template: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    def no_hard_links(source: Path, target: Path) -> None:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(environment.os, "link", no_hard_links)
    assert not empty_store.seed_tracking_store(settings.mlflow_uri, settings.mlflow_artifacts)
    assert list(settings.home.iterdir()) == []


def test_the_environments_template_is_migrated_and_empty(tmp_path: Path) -> None:
    from alembic.script import ScriptDirectory
    from mlflow.store.db.utils import _get_alembic_config

    path = make_template()  # makes it if this environment has none (`make env` makes it)
    assert path == empty_store.tracking_store_template() and path.exists()
    head = ScriptDirectory.from_config(_get_alembic_config(f"sqlite:///{tmp_path / 'x.db'}")).get_current_head()
    with closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as con:
        assert con.execute("select version_num from alembic_version").fetchall() == [(head,)]
        assert con.execute("select experiment_id, name from experiments").fetchall() == [(0, "Default")]
        for table in ("runs", "registered_models", "model_versions", "logged_models"):
            assert con.execute(f"select count(*) from {table}").fetchone()[0] == 0, table
    # MLflow opens a copy without migrating it, and it takes our experiment.
    copy = tmp_path / "home" / "mlflow.db"
    assert empty_store.seed_tracking_store(f"sqlite:///{copy}", tmp_path / "home" / "mlartifacts")
    with tracking_store(f"sqlite:///{copy}") as client:
        assert client.create_experiment("uniroute", artifact_location=(tmp_path / "a").as_uri())
