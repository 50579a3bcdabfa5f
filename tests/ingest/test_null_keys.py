"""Found by tests/properties: a file whose every row lacks its prompt_id was an IndexError, not a quarantine
(long and pairwise alike)."""

from __future__ import annotations

from tests.helpers import ingest
from tests.ingest.files import write
from uniroute import store


def test_a_file_whose_every_prompt_id_is_missing_is_quarantined_not_a_crash(db_path, tmp_path):
    path = write(tmp_path / "nulls.jsonl",
                 '{"prompt_id": null, "prompt": null, "model": null, "score": null, "cost": null}\n'
                 '{"prompt_id": "", "prompt": "Q", "model": "m1", "score": 1, "cost": 0.1}\n')
    summary = ingest(db_path, path, progress=False)
    assert summary.rows_quarantined == 2 and summary.first_problem
    with store.opened(db_path, read_only=True) as con:
        assert con.execute("select count(*) from results").fetchone()[0] == 0
        assert con.execute("select count(*) from quarantine").fetchone()[0] == 2


def test_a_pairwise_file_whose_every_prompt_id_is_missing_is_quarantined_not_a_crash(db_path, tmp_path):
    path = write(tmp_path / "nulls.jsonl",
                 '{"prompt_id": null, "prompt": null, "model_a": null, "model_b": null, "winner": null}\n'
                 '{"prompt_id": null, "prompt": "Q", "model_a": "m1", "model_b": "m2", "winner": "model_a"}\n')
    summary = ingest(db_path, path, progress=False)
    assert summary.rows_quarantined == 2
    with store.opened(db_path, read_only=True) as con:
        assert con.execute("select count(*) from battles").fetchone()[0] == 0
