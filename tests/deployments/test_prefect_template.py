"""New homes' Prefect servers start from the environment's migrated, empty database (deployments/serve.py and
deployments/prefect_template.py): the copy is whole or absent, never replaces a home's own database, and the
template is at Prefect's newest revision with its block types and nothing a user made."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from deployments import serve
from deployments.prefect_template import make_template
from uniroute.settings import Settings


def _database(path: Path, marker: str) -> Path:
    with closing(sqlite3.connect(path)) as con:
        con.execute("create table marker (what text)")
        con.execute("insert into marker values (?)", [marker])
        con.commit()
    return path


@pytest.fixture
def template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = _database(tmp_path / "template.db", "template")
    monkeypatch.setattr(serve, "prefect_database_template", lambda: path)
    return path


def _marker(path: Path) -> str:
    with closing(sqlite3.connect(path)) as con:
        return con.execute("select what from marker").fetchone()[0]


def test_a_home_without_a_database_gets_a_copy_and_a_home_with_one_keeps_it(tmp_path: Path, template: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    assert serve.seed_prefect_database(settings)
    database = settings.prefect_home / serve.PREFECT_DATABASE
    assert database.read_bytes() == template.read_bytes()
    assert sorted(p.name for p in settings.prefect_home.iterdir()) == [serve.PREFECT_DATABASE]  # no part left
    database.unlink()
    _database(database, "the home's own")
    assert not serve.seed_prefect_database(settings)
    assert _marker(database) == "the home's own"


def test_without_a_template_the_server_migrates_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve, "prefect_database_template", lambda: tmp_path / "missing.db")
    settings = Settings(home=tmp_path / "home")
    assert not serve.seed_prefect_database(settings)
    assert not (settings.prefect_home / serve.PREFECT_DATABASE).exists()


def test_a_copy_that_fails_halfway_leaves_no_database(tmp_path: Path, template: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    def half_then_disk_full(source: Path, target: Path) -> None:
        Path(target).write_bytes(Path(source).read_bytes()[:100])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copyfile", half_then_disk_full)
    settings = Settings(home=tmp_path / "home")
    with pytest.raises(OSError, match="No space"):
        serve.seed_prefect_database(settings)
    assert list(settings.prefect_home.iterdir()) == []  # neither half a database nor the part


def _head_revision() -> str:
    """Prefect's newest SQLite migration, from its own migration scripts."""
    import prefect.server.database as database
    from alembic.script import ScriptDirectory

    root = Path(database.__file__).parent / "_migrations"
    head = ScriptDirectory(str(root), version_locations=[str(root / "versions" / "sqlite")]).get_current_head()
    assert head
    return head


@pytest.mark.slow  # makes the template if this environment has none (`make env` makes it): one server start
def test_the_environments_template_is_migrated_registered_and_empty() -> None:
    path = make_template()
    assert path == serve.prefect_database_template() and path.exists()
    # immutable: read without leaving a -shm file beside the environment's template (mode=ro makes one)
    with closing(sqlite3.connect(f"file:{path}?immutable=1", uri=True)) as con:
        assert con.execute("select version_num from alembic_version").fetchall() == [(_head_revision(),)]
        assert con.execute("select count(*) from block_type").fetchone()[0] > 0
        for table in ("flow", "flow_run", "task_run", "deployment", "work_pool", "automation", "log", "variable"):
            assert con.execute(f"select count(*) from {table}").fetchone()[0] == 0, table
