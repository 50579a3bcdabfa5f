"""checks.checked_rows on staged tables built in memory (no file, no store): every reason a row can get, which
problem wins, the repeats within a file (dropped or quarantined), the coded tables it hands to the SQL, and the
string columns as the readers give them (dictionary-coded, in chunks, all null). Milliseconds per test, so the
mutation run (make mutation) can afford the module; the file-to-store tests (test_bad_input, test_load) cover
the same checks end to end."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow as pa
import pytest

from uniroute.ingest.checks import COST_CEILING, QUOTED_PROMPT, Checked, _codes, _repeats, checked_rows
from uniroute.ingest.staging import STAGE_SCHEMA, staged_table


def _rows(n: int | None = None, **columns) -> pa.Table:
    n = n if n is not None else len(next(iter(columns.values())))
    columns.setdefault("row_number", list(range(1, n + 1)))
    return staged_table(n, columns)


def _good(n: int = 2, **override) -> dict:
    """n valid rows: prompts p0..p(n-1) with texts Q0.., one model m, score 0.5, cost 1.0."""
    columns = {"prompt_id": [f"p{i}" for i in range(n)], "prompt": [f"Q{i}" for i in range(n)],
               "model": ["m"] * n, "score": [0.5] * n, "cost": [1.0] * n}
    columns.update(override)
    return columns


def _reasons(checked: Checked) -> dict[int, str]:
    return dict(zip(checked.rejects["row_number"].to_pylist(), checked.rejects["reason"].to_pylist(), strict=True))


def _reason(**override) -> str | None:
    """The reason of the first of two otherwise valid rows with override applied (None: accepted)."""
    return _reasons(checked_rows(_rows(**_good(2, **override)))).get(1)


def test_valid_rows_come_out_coded_with_their_prompts_and_models():
    checked = checked_rows(_rows(prompt_id=["p1", "p2", "p1"], prompt=["Q1", "Q2", "Q1"], model=["a", "a", "b"],
                                 score=[0.0, 1.0, 0.25], cost=[0.5, None, 2.0], split=["val", "test", "val"],
                                 benchmark=["bench", "bench", "other"], sample_key=["k1", "k2", "k3"]))
    assert checked.rejects.num_rows == 0 and checked.duplicates == 0 and checked.shared_texts == 0
    c = checked.candidates
    assert c["row_number"].to_pylist() == [1, 2, 3] and c["pid"].to_pylist() == [0, 1, 0]
    assert c["mid"].to_pylist() == [0, 0, 1] and c["score"].to_pylist() == [0.0, 1.0, 0.25]
    assert c["cost"].to_pylist() == [0.5, None, 2.0] and c["raw_score"].to_pylist() == [None] * 3
    assert c["pid"].type == pa.int32() and c["mid"].type == pa.int32()
    assert checked.prompts.to_pylist() == [
        {"pid": 0, "prompt_id": "p1", "text": "Q1", "benchmark": "bench", "split": "val", "sample_key": "k1"},
        {"pid": 1, "prompt_id": "p2", "text": "Q2", "benchmark": "bench", "split": "test", "sample_key": "k2"}]
    assert checked.models.to_pylist() == [{"mid": 0, "model": "a"}, {"mid": 1, "model": "b"}]


def test_a_published_score_is_kept_beside_the_score():
    checked = checked_rows(_rows(**_good(2, raw_score=[7.0, None])))
    assert checked.candidates["raw_score"].to_pylist() == [7.0, None]


def test_an_empty_file_gives_empty_tables():
    checked = checked_rows(STAGE_SCHEMA.empty_table())
    assert checked.candidates.num_rows == checked.rejects.num_rows == checked.prompts.num_rows == 0
    assert checked.rejects.schema.names == ["row_number", "reason", "raw"]
    assert checked.rejects.schema.field("row_number").type == pa.int64()
    assert (checked.duplicates, checked.shared_texts) == (0, 0)


@pytest.mark.parametrize(("override", "reason"), [
    ({"pre_reason": ["a problem the parser found", None]}, "a problem the parser found"),
    ({"prompt_id": ["", "p1"]}, "empty prompt_id"),
    ({"prompt_id": [None, "p1"]}, "empty prompt_id"),
    ({"model": ["", "m"]}, "empty model name"),
    ({"model": [None, "m"]}, "empty model name"),
    ({"prompt_id": [" p0", "p1"]}, 'prompt_id " p0" has leading or trailing whitespace'),
    ({"prompt_id": ["p0\n", "p1"]}, 'prompt_id "p0\\n" has leading or trailing whitespace'),
    ({"model": ["m ", "m"]}, 'model name "m " has leading or trailing whitespace'),
    ({"model": ["a\nb", "m"]}, 'model name "a\\nb" contains a control or bidirectional-override character'),
    ({"model": ["a\u202eb", "m"]}, 'model name "a\\u202eb" contains a control or bidirectional-override character'),
    ({"model": ["a\x7fb", "m"]}, 'model name "a\\u007fb" contains a control or bidirectional-override character'),
    ({"prompt_id": ["=1+1", "p1"]}, 'prompt_id "=1+1" starts like a spreadsheet formula'),
    ({"prompt_id": ["@x", "p1"]}, 'prompt_id "@x" starts like a spreadsheet formula'),
    ({"model": ["-m", "m"]}, 'model name "-m" starts like a spreadsheet formula'),
    ({"model": ["+m", "m"]}, 'model name "+m" starts like a spreadsheet formula'),
    ({"prompt": ["  \t", "Q1"]}, "empty prompt text"),
    ({"prompt": [None, "Q1"]}, "empty prompt text"),
    ({"score": [None, 0.5], "score_text": ["high", None]}, 'score "high" is not a number'),
    ({"score": [None, 0.5]}, "score is missing"),
    ({"score": [math.nan, 0.5]}, "score NaN is not a number in [0, 1]"),
    ({"score": [-0.1, 0.5]}, "score -0.1 is outside [0, 1]"),
    ({"score": [1.5, 0.5]}, "score 1.5 is outside [0, 1]"),
    ({"score": [math.inf, 0.5]}, "score inf is outside [0, 1]"),
    ({"cost": [None, 1.0], "cost_text": ["cheap", None]}, 'cost "cheap" is not a number'),
    ({"cost": [math.nan, 1.0]}, "cost NaN is not a number (leave it empty for no cost)"),
    ({"cost": [math.inf, 1.0]}, "cost inf is not finite"),
    ({"cost": [-math.inf, 1.0]}, "cost -inf is not finite"),
    ({"cost": [-0.5, 1.0]}, "cost -0.5 is negative"),
    ({"cost": [COST_CEILING + 0.5, 1.0]}, "cost 1000000.5 is above the ceiling of 1e+06 per query (check its unit)"),
    ({"split": ["dev", "val"]}, 'split "dev" is not train, val or test'),
])
def test_each_problem_of_a_row_on_its_own_is_its_reason(override, reason):
    assert _reason(**override) == reason


@pytest.mark.parametrize("override", [
    {"score": [0.0, 1.0]}, {"cost": [0.0, COST_CEILING]}, {"cost": [None, None]}, {"split": [None, "train"]},
    {"prompt_id": ["p-1", "p1"]}, {"model": ["m=1", "m"]}, {"prompt": [" Q ", "Q1"]},
])
def test_edges_that_are_valid_are_accepted(override):
    checked = checked_rows(_rows(**_good(2, **override)))
    assert _reasons(checked) == {} and checked.candidates.num_rows == 2


def test_the_first_problem_found_on_a_row_is_its_reason():
    assert _reason(prompt_id=["", "p1"], model=["", "m"], score=[9.0, 0.5]) == "empty prompt_id"
    assert _reason(model=["=m ", "m"]) == 'model name "=m " has leading or trailing whitespace'
    assert _reason(score=[9.0, 0.5], cost=[-1.0, 1.0]) == "score 9.0 is outside [0, 1]"
    assert _reason(cost=[-1.0, 1.0], split=["dev", "val"]) == "cost -1.0 is negative"
    assert _reason(cost=[None, 1.0], cost_text=["x", None], split=["dev", "val"]) == 'cost "x" is not a number'
    assert _reason(pre_reason=["parse", None], prompt_id=["", "p1"]) == "parse"


def test_problems_on_several_rows_each_get_theirs_and_the_rest_is_kept():
    checked = checked_rows(_rows(**_good(4, score=[0.5, 2.0, 0.5, 0.5], cost=[1.0, 1.0, -2.0, 1.0],
                                         model=["m", "m", "m", "a\tb"])))
    assert _reasons(checked) == {2: "score 2.0 is outside [0, 1]", 3: "cost -2.0 is negative",
                                 4: 'model name "a\\tb" contains a control or bidirectional-override character'}
    assert checked.candidates["row_number"].to_pylist() == [1]


def test_a_prompt_given_another_text_or_split_later_in_the_file_is_quarantined_there():
    checked = checked_rows(_rows(prompt_id=["p", "p", "p", "q", "q"], prompt=["Q", "Q", "other", "R", "R"],
                                 model=["a", "b", "c", "a", "b"], score=[0.5] * 5,
                                 split=["val", "test", "val", "train", None]))
    assert _reasons(checked) == {2: 'prompt_id "p" has split "test" here but "val" on row 1',
                                 3: 'prompt_id "p" was given a different text on row 1',
                                 5: 'prompt_id "q" has split null here but "train" on row 4'}


def test_a_split_given_on_a_later_row_only_contradicts_the_first():
    checked = checked_rows(_rows(prompt_id=["p", "p"], prompt=["Q", "Q"], model=["a", "b"], score=[0.5, 0.5],
                                 split=[None, "val"]))
    assert _reasons(checked) == {2: 'prompt_id "p" has split "val" here but null on row 1'}


def test_the_first_valid_row_of_a_prompt_fixes_its_text():
    """A first row rejected for another reason does not fix the text: the next valid one does."""
    checked = checked_rows(_rows(prompt_id=["p", "p", "p"], prompt=["old", "new", "old"], model=["a", "b", "c"],
                                 score=[5.0, 0.5, 0.5]))
    assert _reasons(checked) == {1: "score 5.0 is outside [0, 1]",
                                 3: 'prompt_id "p" was given a different text on row 2'}
    assert checked.prompts["text"].to_pylist() == ["new"]


def test_one_split_for_every_row_needs_no_comparison_and_prompts_without_ids_anchor_nothing():
    checked = checked_rows(_rows(prompt_id=["p", "p", None], prompt=["Q", "Q", "Q"], model=["a", "b", "c"],
                                 score=[0.5] * 3, split=["val"] * 3))
    assert _reasons(checked) == {3: "empty prompt_id"} and checked.candidates.num_rows == 2


def test_an_identical_repeat_is_dropped_and_a_different_one_quarantined_with_both_results():
    checked = checked_rows(_rows(prompt_id=["p", "p", "p", "p"], prompt=["Q"] * 4, model=["a", "a", "a", "b"],
                                 score=[0.5, 0.5, 1.0, 0.5], cost=[None, None, 2.0, None],
                                 raw_score=[None, None, 9.0, None]))
    assert checked.duplicates == 1
    assert _reasons(checked) == {3: 'duplicate of ("p", "a") on row 1 with a different result: score 0.5 cost null '
                                    "there, score 1.0 (published 9.0) cost 2.0 here"}
    assert checked.candidates["row_number"].to_pylist() == [1, 4]


@pytest.mark.parametrize(("second", "duplicate"), [
    ({"cost": 1.0, "raw_score": None}, True), ({"cost": None, "raw_score": None}, False),
    ({"cost": 1.0, "raw_score": 3.0}, False), ({"cost": 2.0, "raw_score": None}, False),
])
def test_a_repeat_is_identical_only_when_score_cost_and_published_score_all_match(second, duplicate):
    checked = checked_rows(_rows(prompt_id=["p", "p"], prompt=["Q", "Q"], model=["a", "a"], score=[0.5, 0.5],
                                 cost=[1.0, second["cost"]], raw_score=[None, second["raw_score"]]))
    assert checked.duplicates == int(duplicate) and len(_reasons(checked)) == int(not duplicate)


def test_repeats_of_rows_already_rejected_are_not_repeats():
    checked = checked_rows(_rows(prompt_id=["p", "p", "p"], prompt=["Q"] * 3, model=["a"] * 3,
                                 score=[7.0, 0.5, 0.5]))
    assert checked.duplicates == 1 and _reasons(checked) == {1: "score 7.0 is outside [0, 1]"}
    assert checked.candidates["row_number"].to_pylist() == [2]


def test_the_same_text_under_two_ids_scored_two_ways_by_one_model_is_quarantined():
    checked = checked_rows(_rows(prompt_id=["p", "q", "r", "q"], prompt=["Q", "Q", "Q", "Q"],
                                 model=["a", "a", "b", "b"], score=[1.0, 0.0, 1.0, 1.0]))
    assert _reasons(checked) == {2: 'prompt_id "q" has the same text as prompt_id "p" on row 1, and model "a" '
                                    "scored it 1.0 there, 0.0 here"}
    assert checked.shared_texts == 3  # p, q (its row for model b) and r share the text Q


def test_ids_sharing_a_text_are_counted_once_each_and_agreeing_scores_are_kept():
    checked = checked_rows(_rows(prompt_id=["p", "q", "p", "s", "t"], prompt=["Q", "Q", "Q", "S", "T"],
                                 model=["a", "a", "b", "a", "a"], score=[1.0, 1.0, 0.0, 0.0, 0.0]))
    assert _reasons(checked) == {} and checked.shared_texts == 2 and checked.duplicates == 0


def test_a_row_holding_several_models_names_the_model_in_its_reasons_but_not_in_a_parse_problem():
    rows = _rows(prompt_id=["p", "p", "p", "q"], prompt=["Q"] * 3 + ["R"], model=["a", "b", None, "a"],
                 score=[0.5, 3.0, 0.5, 0.5], pre_reason=[None, None, None, "row 4 is broken"])
    assert _reasons(checked_rows(rows, per_model=True)) == {
        2: 'model "b": score 3.0 is outside [0, 1]', 3: "empty model name", 4: "row 4 is broken"}
    assert _reasons(checked_rows(rows)) == {2: "score 3.0 is outside [0, 1]", 3: "empty model name",
                                            4: "row 4 is broken"}


def test_a_rejected_row_is_quoted_as_given_or_as_the_reader_kept_it():
    long_prompt = "x" * (QUOTED_PROMPT + 50)
    checked = checked_rows(_rows(prompt_id=["p", "q", "r"], prompt=[long_prompt, "Q", "R"], model=["m"] * 3,
                                 score=[None, 2.0, None], score_text=["high", None, None], cost=[1.5, None, None],
                                 cost_text=[None, "dear", None], raw_score=[None, 80.0, None], split=["val"] * 3,
                                 raw=[None, None, '{"as": "read"}']))
    raws = dict(zip(checked.rejects["row_number"].to_pylist(), checked.rejects["raw"].to_pylist(), strict=True))
    assert json.loads(raws[1]) == {"prompt_id": "p", "model": "m", "score": "high", "cost": 1.5, "split": "val",
                                   "prompt": "x" * QUOTED_PROMPT}
    assert json.loads(raws[2]) == {"prompt_id": "q", "model": "m", "score": 80.0, "cost": "dear", "split": "val",
                                   "prompt": "Q"}
    assert raws[3] == '{"as": "read"}'


def test_strings_coded_by_the_reader_are_compared_by_value():
    """A dictionary-coded column (Parquet) whose dictionary repeats a value, and one in chunks with a dictionary
    each: the same id under two codes is still one id (here: a repeat), and nulls are nulls."""
    folded = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2, None], pa.int32()), pa.array(["p", "p", "q"]))
    checked = checked_rows(_rows(prompt_id=folded, prompt=["Q", "Q", "R", "S"], model=["m"] * 4,
                                 score=[0.5, 0.5, 0.5, 0.5]))
    assert checked.duplicates == 1 and _reasons(checked) == {4: "empty prompt_id"}
    chunked = pa.chunked_array([
        pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array(["a", "b"])),
        pa.DictionaryArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array(["c", "a"]))])
    checked = checked_rows(_rows(prompt_id=["p"] * 4, prompt=["Q"] * 4, model=chunked, score=[0.5, 0.5, 1.0, 0.5]))
    assert checked.models["model"].to_pylist() == ["a", "b", "c"]  # rows 1 and 3 are both "a"
    assert _reasons(checked) == {3: 'duplicate of ("p", "a") on row 1 with a different result: score 0.5 cost null '
                                    "there, score 1.0 cost null here"}


def test_codes_of_a_column_equal_exactly_where_the_strings_do():
    codes, values = _codes(pa.chunked_array([pa.array(["b", None]), pa.array(["a", "b"])]))
    assert [None if c < 0 else values[int(c)].as_py() for c in codes] == ["b", None, "a", "b"]
    codes, values = _codes(pa.chunked_array([], pa.string()))
    assert len(codes) == 0 and len(values) == 0
    codes, values = _codes(pa.array([None, None], pa.string()))
    assert codes.tolist() == [-1, -1] and len(values) == 0
    single = pa.DictionaryArray.from_arrays(pa.array([1, None, 0], pa.int32()), pa.array(["x", "y"]))
    codes, values = _codes(single)
    assert [None if c < 0 else values[int(c)].as_py() for c in codes] == ["y", None, "x"]


def test_repeats_are_found_by_counting_and_by_sorting_alike():
    keys = np.array([5, 3, 5, 9, 3, 5], dtype=np.int64)
    for key_range in (10, 10**9):  # a small range is counted, a large one sorted
        later, earlier = _repeats(keys, key_range)
        assert later.tolist() == [2, 4, 5] and earlier.tolist() == [0, 1, 0]
    distinct = np.array([4, 1, 7], dtype=np.int64)
    for key_range in (8, 10**9):
        assert [a.tolist() for a in _repeats(distinct, key_range)] == [[], []]
    assert [a.tolist() for a in _repeats(np.zeros(0, dtype=np.int64), 10)] == [[], []]


def test_many_ids_and_models_find_their_repeats_too():
    """More (prompt_id, model) pairs than a counting pass is worth: the sorted path, end to end."""
    n = 60
    ids = [f"p{i}" for i in range(n)] + ["p7", "p9"]
    models = [f"m{i}" for i in range(n)] + ["m7", "m9"]
    scores = [0.5] * n + [0.5, 1.0]
    checked = checked_rows(_rows(prompt_id=ids, prompt=[f"Q{i}" for i in range(n)] + ["Q7", "Q9"], model=models,
                                 score=scores))
    assert checked.duplicates == 1
    assert _reasons(checked) == {n + 2: 'duplicate of ("p9", "m9") on row 10 with a different result: score 0.5 '
                                        "cost null there, score 1.0 cost null here"}


def test_a_file_whose_every_prompt_id_is_missing_is_all_rejected_not_a_crash():
    checked = checked_rows(_rows(prompt_id=[None, None], prompt=["Q", "R"], model=["a", "b"], score=[0.5, 0.5],
                                 split=["val", "test"]))
    assert _reasons(checked) == {1: "empty prompt_id", 2: "empty prompt_id"} and checked.candidates.num_rows == 0


def test_the_bounds_themselves_are_valid_beside_a_row_that_is_not():
    """A file with one bad value gets the closer look at every row: 0 and 1 stay valid scores, 0, 0.5 and the
    ceiling valid costs."""
    scores = checked_rows(_rows(**_good(3, score=[0.0, 1.0, 2.0])))
    assert _reasons(scores) == {3: "score 2.0 is outside [0, 1]"}
    costs = checked_rows(_rows(**_good(4, cost=[0.0, 0.5, COST_CEILING, -1.0])))
    assert _reasons(costs) == {4: "cost -1.0 is negative"}


def test_a_prompt_moved_between_two_splits_is_quarantined():
    checked = checked_rows(_rows(prompt_id=["p", "p"], prompt=["Q", "Q"], model=["a", "b"], score=[0.5, 0.5],
                                 split=["train", "test"]))
    assert _reasons(checked) == {2: 'prompt_id "p" has split "test" here but "train" on row 1'}
