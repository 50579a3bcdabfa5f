"""Properties of the ingest readers: whatever bytes or records arrive, reading them either gives staged rows or
raises the project's one error, IngestError, in one line naming the file; and loading what was read into a
store either lands (good rows, quarantine) or raises that same one-line error, never anything else."""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from uniroute import store
from uniroute.ingest import IngestError, ingest_file, staged_file

LONG = ["prompt_id", "prompt", "model", "score", "cost", "benchmark", "split"]
PAIRWISE = ["prompt_id", "question_id", "prompt", "model_a", "model_b", "winner", "preference"]
WIDE = ["sample_id", "prompt", "eval_name", "m1", "m2", "m1|total_cost", "m2|total_cost", "oracle"]
COLUMNS = LONG + PAIRWISE + WIDE + ["question", "scores", "x"]
NAMES = ["file.csv", "file.jsonl", "file.json", "file.parquet", "file", "file.txt"]

# Cells a hostile or careless export may hold.
CELLS = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.sampled_from(["", " ", "nan", "NULL", "1e309", "-0", "model_a", "tie (bothbad)",
                                           "val", "train", "test", "\ufeff", "\x00", '"', "\r\n", "1,5"]),
)
JSON_VALUES = st.recursive(CELLS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(COLUMNS) | st.text(max_size=8), inner, max_size=5), max_leaves=20)


def _one_line_error(exc: IngestError, path: Path) -> None:
    message = str(exc)
    assert message.strip() and "\n" not in message.strip(), repr(message)
    assert path.name in message, message  # names the file


def _read(data: bytes, name: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            staged_file(path)
        except IngestError as exc:
            _one_line_error(exc, path)


@settings(max_examples=200)
@given(st.binary(max_size=3000), st.sampled_from(NAMES))
def test_arbitrary_bytes_are_read_or_refused_in_one_line(data, name):
    _read(data, name)


@settings(max_examples=150)
@given(st.sampled_from([b"PAR1", b"\x1f\x8b", b"PK\x03\x04", b"\xef\xbb\xbf", b"[", b"{", b"prompt_id,"]),
       st.binary(max_size=1000), st.sampled_from(NAMES))
def test_bytes_behind_a_known_signature_are_read_or_refused_in_one_line(head, tail, name):
    _read(head + tail, name)


def _csv(header: list[str], rows: list[list]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode("utf-8", errors="surrogatepass")


@st.composite
def csv_files(draw) -> bytes:
    header = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=9))
    rows = draw(st.lists(st.lists(CELLS, min_size=len(header), max_size=len(header) + 1), max_size=8))
    return _csv(header, rows)


@st.composite
def json_files(draw) -> bytes:
    records = draw(st.lists(st.dictionaries(st.sampled_from(COLUMNS), JSON_VALUES, max_size=8), max_size=6))
    if draw(st.booleans()):  # JSONL
        return "\n".join(json.dumps(r, allow_nan=True) for r in records).encode()
    return json.dumps(records if draw(st.booleans()) else draw(JSON_VALUES), allow_nan=True).encode()


@settings(max_examples=200)
@given(csv_files() | json_files(), st.sampled_from(NAMES))
def test_arbitrary_records_are_read_or_refused_in_one_line(data, name):
    _read(data, name)


@pytest.fixture(scope="module")
def db_path(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("ingest_props") / "uniroute.duckdb"


@settings(max_examples=25)
@given(csv_files() | json_files(), st.sampled_from(["file.csv", "file.jsonl", "file.json"]))
def test_arbitrary_records_land_or_are_refused_in_one_line_and_leave_the_store_usable(db_path, data, name):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        try:
            with store.session(db_path, "ingest", inputs=str(path)) as s:
                ingest_file(s.con, path, progress=False)
        except IngestError as exc:
            _one_line_error(exc, path)
    with store.opened(db_path, read_only=True) as con:  # the store still opens and answers
        con.execute("select count(*) from results").fetchone()
