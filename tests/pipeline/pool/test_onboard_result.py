"""What an onboarding run reports, line by line: added, refreshed and unchanged models and those waiting for
evidence. Added where the mutation run (make mutation) found the wording and its cases untested."""

from __future__ import annotations

from uniroute.pipeline.pool.onboard import OnboardResult


def test_an_onboarding_line_names_the_models_the_router_and_what_waits():
    done = OnboardResult("r-2", "r-1", ("c", "d"), ("a",), 5, 1.234, {"e": 3}, 20)
    assert done.line() == ("onboarded c, d -> router r-2 (parent r-1), 5 new prompts embedded; a unchanged, 1.23s; "
                           "e waits for more evidence (3 validation answers, 20 needed before it takes traffic)")
    plain = OnboardResult("r-2", "r-1", ("c",), (), 0, 0.5)
    assert plain.line() == "onboarded c -> router r-2 (parent r-1), 0 new prompts embedded, 0.50s"


def test_nothing_to_change_says_so_with_or_without_waiting_models():
    same = OnboardResult("r-1", "r-0", (), ("a", "b"), 0, 0.1)
    assert same.line() == "a, b already routable in router r-1: nothing to change"
    waiting = OnboardResult("r-1", "r-0", (), ("a",), 0, 0.1, {"e": 3, "f": 1}, 20)
    assert waiting.line() == ("a already routable in router r-1: nothing to change; e waits for more evidence (3 "
                              "validation answers, 20 needed before it takes traffic); f waits for more evidence (1 "
                              "validation answers, 20 needed before it takes traffic)")
    only_waiting = OnboardResult("r-1", "r-0", (), (), 0, 0.1, {"e": 3}, 20)
    assert only_waiting.line() == "e waits for more evidence (3 validation answers, 20 needed before it takes traffic)"


def test_as_dict_lists_the_models():
    result = OnboardResult("r-2", "r-1", ("c",), ("a",), 5, 1.0, {"e": 3}, 20)
    assert result.as_dict() == {"router_id": "r-2", "parent_id": "r-1", "models": ["c"], "unchanged": ["a"],
                                "embedded_prompts": 5, "seconds": 1.0, "waiting": {"e": 3}, "min_answers": 20,
                                "gate": {}}


def test_the_line_says_the_evidence_gate():
    gate = {"c": {"status": "provisional", "budget": 0.4, "provisional_clusters": [0, 2],
                  "next_prompts": [f"p{i}" for i in range(7)]},
            "d": {"status": "full", "budget": 0.4, "provisional_clusters": [], "next_prompts": []}}
    result = OnboardResult("r-2", "r-1", ("c", "d"), (), 0, 0.5, gate=gate)
    assert result.line() == (
        "onboarded c, d -> router r-2 (parent r-1), 0 new prompts embedded, 0.50s; c is provisional in clusters "
        "[0, 2] (it would win them at the default budget 0.4 on too little evidence: routed there by the upper end "
        "of its error's interval until it answers 7 more: p0, p1, p2, p3, p4 and 2 more); d passes the evidence gate")
