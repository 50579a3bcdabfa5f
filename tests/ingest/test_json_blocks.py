"""A large RouterDC JSON file is read entry by entry (uniroute/ingest/json_stream.py) and written in blocks: the
same prompts, results, scores and quarantine as reading it whole, on slices of the shared RouterDC files written to
tmp (one of each kind of score), and the same one-line refusal (message, line, column) for a broken document. The
buffer and block sizes are tiny, so entries, strings and numbers are cut by the buffer's end."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.helpers import ingest
from tests.ingest.files import assert_same_ingest, ingest_in_blocks_and_whole, rows, write
from uniroute.ingest import IngestError
from uniroute.ingest import blocks as batches
from uniroute.ingest.formats import staged_file
from uniroute.ingest.json_stream import json_list_items

TABLES = ("select prompt_id, text, benchmark from prompts order by 1",
          "select prompt_id, model, score, raw_score from results order by 1, 2",
          "select row_number, reason from quarantine order by 1, 2")
ENTRIES = 120


@pytest.fixture
def tiny_blocks(monkeypatch):
    monkeypatch.setattr(batches, "BATCH_BYTES", 1024)
    monkeypatch.setattr(batches, "BLOCK_BYTES", 8 * 1024)
    monkeypatch.setattr(batches, "CHUNK_BYTES", 97)


def _slice(shared_datasets: Path, name: str, out: Path) -> Path:
    source = shared_datasets / "routerdc_model7" / "raw" / "datasets" / "split2_model7" / name
    entries = json.loads(source.read_text(encoding="utf-8"))[:ENTRIES]
    entries[7] = "not an object"  # quarantined
    entries[50] = {"question": entries[50]["question"]}  # no scores: quarantined
    entries[60]["scores"] = {**entries[60]["scores"], "late-model": "junk"}  # a score that is not a number
    entries[90] = dict(entries[3])  # a repeat of an earlier entry: a duplicate, skipped
    return write(out / name, json.dumps(entries, indent=1, ensure_ascii=False))


@pytest.mark.parametrize("name", ["arc_challenge_test.json", "gsm8k-test.json"])
def test_routerdc_blocks_write_what_the_whole_file_writes(tmp_path, home, shared_datasets, tiny_blocks, empty_store,
                                                          name):
    path = _slice(shared_datasets, name, tmp_path)
    blocks = list(batches.long_batches(path, None))
    assert len(blocks) > 3 and sum(block.rows_read for block in blocks) == ENTRIES
    blocked, whole, blocks_db, whole_db = ingest_in_blocks_and_whole(tmp_path, path, empty_store)
    assert_same_ingest(blocked, whole, ("format", "rows_read", "rows_accepted", "rows_duplicate", "rows_quarantined",
                                        "new_prompts", "new_models", "models", "first_problem", "ignored_columns"),
                       blocks_db, whole_db, TABLES)
    assert whole.format == "routerdc-json" and whole.rows_quarantined == 3 and whole.rows_duplicate > 0
    # the shared arc file publishes probabilities (kept as raw_score), gsm8k fractions of correct samples
    probabilities = rows(whole_db, "select count(raw_score) from results")[0][0]
    assert (probabilities > 0) == name.startswith("arc"), probabilities


def _refusals(path: Path) -> tuple[str, str]:
    """(the refusal reading the file in blocks, the refusal reading it whole)."""
    with pytest.raises(IngestError) as blocked:
        list(batches.long_batches(path, None))
    with pytest.raises(IngestError) as whole:
        staged_file(path)
    return str(blocked.value), str(whole.value)


def _broken(text: str) -> list[str]:
    at = text.index('"question"', len(text) // 2)
    comma = text.index("},", len(text) // 2) + 1
    return [
        *(text[:cut] for cut in range(len(text) // 3, len(text), len(text) // 40)),  # truncated anywhere
        text[:comma] + text[comma + 1:],  # a missing comma between entries
        text[:comma] + "," + text[comma:],  # two commas
        text[:at] + text[at + 1:],  # a broken key
        text.rstrip()[:-1] + ",]",  # a trailing comma
        text + "\n\n  {}",  # data after the list
        text[:at] + '"q": 1e5' + text[at:],  # a number cut by the buffer's end at some size, then a missing comma
    ]


def test_a_broken_routerdc_document_is_refused_as_when_read_whole(tmp_path, shared_datasets, tiny_blocks):
    text = _slice(shared_datasets, "gsm8k-test.json", tmp_path).read_text(encoding="utf-8")
    for number, broken in enumerate(_broken(text)):
        path = write(tmp_path / f"broken-{number}.json", broken)
        blocked, whole = _refusals(path)
        assert blocked == whole, number
        assert "not valid JSON (truncated?)" in whole and " at line " in whole


def test_a_late_lone_surrogate_or_nesting_bomb_is_one_line_and_writes_nothing(tmp_path, db_path, shared_datasets,
                                                                              tiny_blocks):
    text = _slice(shared_datasets, "gsm8k-test.json", tmp_path).read_text(encoding="utf-8")
    at = text.rindex('"question": "') + len('"question": "')
    for bad, message in (("\\ud800", "text that cannot be UTF-8"), (None, "JSON nested too deeply")):
        if bad is None:
            end = text.rindex("}")
            broken = text[:end] + ', "x": ' + "[" * 100_000 + "]" * 100_000 + text[end:]
        else:
            broken = text[:at] + bad + text[at:]
        path = write(tmp_path / "bad.json", broken)
        blocked, whole = _refusals(path)
        assert message in blocked and message in whole
        with pytest.raises(IngestError, match=message):
            ingest(db_path, path, progress=False)
        for table in ("results", "prompts", "quarantine", "ingested_files"):
            assert rows(db_path, f"select count(*) from {table}") == [(0,)], table


def test_any_buffer_size_reads_the_entries_json_loads_reads():
    text = json.dumps([12345678901234, -1.5e-7, {"q": "caf\u00e9 \\\"quoted\\\" \ud83d\ude00", "n": [1, 2.25, None]},
                       True, False, None, "tail\\u00e9", 7], ensure_ascii=True, indent=2)
    expected = json.loads(text)
    for chunk in range(1, 40):
        assert [entry for entry, _ in json_list_items(io.StringIO(text), chunk)] == expected, chunk
    for broken in (text.replace(",\n  -1.5", "\n  -1.5"), text[:-3], text.replace("true", "tru"), text + " x"):
        with pytest.raises(json.JSONDecodeError) as whole:
            json.loads(broken)
        for chunk in range(1, 40):
            with pytest.raises(json.JSONDecodeError) as streamed:
                list(json_list_items(io.StringIO(broken), chunk))
            got, want = streamed.value, whole.value
            assert (got.msg, got.lineno, got.colno) == (want.msg, want.lineno, want.colno), (broken[-20:], chunk)
