"""checked_pairs on its own (staged files, no store): each reason a battle can get within its file, in
milliseconds. Added where the mutation run (make mutation) found the pairwise checks untested by fast tests."""

from __future__ import annotations

import json
from pathlib import Path

from tests.ingest.files import write
from uniroute.ingest import staged_file
from uniroute.ingest.pairwise_checks import CheckedPairs, checked_pairs


def _checked(path: Path) -> CheckedPairs:
    return checked_pairs(staged_file(path).rows)


def _reasons(checked: CheckedPairs) -> list[tuple[int, str]]:
    return [(r["row_number"], r["reason"]) for r in checked.rejects.to_pylist()]


def _jsonl(path: Path, *records: dict) -> Path:
    return write(path, "".join(json.dumps(r) + "\n" for r in records))


def _battle(prompt_id: str | None, prompt: str | None, model_a: str | None, model_b: str | None,
            winner: str = "tie") -> dict:
    return {"prompt_id": prompt_id, "prompt": prompt, "model_a": model_a, "model_b": model_b, "winner": winner}


def test_a_missing_prompt_id_model_or_prompt_text_is_named_and_the_rest_is_kept(tmp_path: Path) -> None:
    checked = _checked(_jsonl(tmp_path / "b.jsonl",
                              _battle("b1", "One", "m1", "m2", "model_a"), _battle(None, "One", "m1", "m2"),
                              _battle("b2", "Two " * 50, None, "m2"), _battle("b3", "Three", "m1", None),
                              _battle("b4", None, "m1", "m2")))
    assert _reasons(checked) == [(2, "empty prompt_id"), (3, "empty model_a"), (4, "empty model_b"),
                                 (5, "empty prompt text")]
    assert checked.candidates["row_number"].to_pylist() == [1]
    assert json.loads(checked.rejects["raw"][1].as_py())["prompt"] == ("Two " * 50)[:120]  # the prompt cut short


def test_a_file_of_one_prompt_and_a_row_without_prompt_id_rejects_just_that_row(tmp_path: Path) -> None:
    checked = _checked(_jsonl(tmp_path / "b.jsonl", _battle("b1", "One", "m1", "m2", "model_a"),
                              _battle(None, "One", "m1", "m3")))
    assert _reasons(checked) == [(2, "empty prompt_id")]
    assert checked.prompts["prompt_id"].to_pylist() == ["b1"]


def test_the_first_prompt_of_the_file_given_another_text_later_is_rejected_there(tmp_path: Path) -> None:
    checked = _checked(write(tmp_path / "b.csv", "prompt_id,prompt,model_a,model_b,winner\n"
                             "b1,One,m1,m2,model_a\nb2,Two,m1,m2,tie\nb1,Other,m1,m3,tie\n"))
    assert _reasons(checked) == [(3, 'prompt_id "b1" was given a different text on row 1')]
    assert json.loads(checked.rejects["raw"][0].as_py()) == {  # a CSV row's input, as JSON, in the quarantine
        "prompt_id": "b1", "model_a": "m1", "model_b": "m3", "winner": "tie", "preference": 0.5, "split": None,
        "prompt": "Other"}
    assert checked.prompts.select(["prompt_id", "text"]).to_pylist() == [
        {"prompt_id": "b1", "text": "One"}, {"prompt_id": "b2", "text": "Two"}]


def test_a_conflicting_continuous_preference_names_both_outcomes_and_the_reversed_repeat_is_a_duplicate(
        tmp_path: Path) -> None:
    checked = _checked(write(tmp_path / "b.csv", "prompt_id,prompt,model_a,model_b,preference\n"
                             "b1,One,m1,m2,0.7\nb1,One,m1,m2,0.25\nb1,One,m2,m1,0.3\nb1,One,m3,m2,0.6\n"))
    assert _reasons(checked) == [(2, 'duplicate of the battle ("b1", "m1" vs "m2") on row 1 with a different '
                                     'outcome: preference 0.7 for "m1" there, preference 0.25 for "m1" here')]
    # the reversed repeat (m2 vs m1 at 0.3 is m1 vs m2 at 0.7) is dropped; m3 vs m2 is another battle
    assert checked.duplicates == 1 and checked.candidates["row_number"].to_pylist() == [1, 4]


def test_a_prompt_given_another_split_later_is_rejected_there_and_a_last_row_new_prompt_is_kept(
        tmp_path: Path) -> None:
    checked = _checked(write(tmp_path / "b.csv", "prompt_id,prompt,model_a,model_b,winner,split\n"
                             "b1,One,m1,m2,model_a,val\nb2,Two,m1,m2,tie,\nb1,One,m1,m3,tie,test\n"
                             "b2,Two,m1,m3,tie,val\nb3,Three,m1,m2,tie,train\n"))
    assert _reasons(checked) == [(3, 'prompt_id "b1" has split "test" here but "val" on row 1'),
                                 (4, 'prompt_id "b2" has split "val" here but null on row 2')]
    assert checked.candidates["row_number"].to_pylist() == [1, 2, 5]
