"""The ensemble pilot's summary: paired against auto of the same trials, its gap share of the oracle's."""

from __future__ import annotations

from benchmarks.quality import ensemble_pilot as pilot


def _row(trial: int, auto: float, better: float) -> dict:
    areas = {name: auto + better for name in ("knn", "kmeans_shrunk", *pilot.VARIANTS)}
    areas.update({f"ens_w{w:g}": auto for w in pilot.WEIGHTS}, auto=auto, zero=0.5)
    return {"trial": trial, "auto_kind": "kmeans_shrunk", "w_val": 0.25, "w_val01": 0.0, "w_multik_knn": 0.5,
            "area": areas}


def test_summary_pairs_with_auto_and_measures_the_gap_to_the_recorded_oracle() -> None:
    rows = [_row(0, 0.7, 0.01), _row(1, 0.8, 0.01), _row(2, 0.6, -0.02)]
    recorded = {"per_trial_area": {"auto": [0.7, 0.8, 0.6, 0.0], "mlp": [0.9, 0.9, 0.9, 0.0],
                                   "knn": [0.71, 0.0, 0.0, 0.0], "kmeans_shrunk": [0.71, 0.81, 0.58, 0.0]}}
    out = pilot.summary(rows, recorded)
    assert out["reproduced"] == {"auto": 3, "knn": 1, "kmeans_shrunk": 3}
    assert abs(out["auto_gap_share"] - (0.7 - 0.5) / (0.9 - 0.5)) < 1e-12
    ens = out["variants"]["ens_val"]
    assert (ens["wins"], ens["losses"]) == (2, 1)
    assert abs(ens["gap_share"] - (0.7 - 0.5) / 0.4) < 1e-12  # +0.01, +0.01, -0.02: the same mean as auto
    assert out["chosen_w_val"] == {"0.25": 3, "0.5": 0, "0.75": 0}
    table = pilot.markdown({"routerbench_subset": {**out, "load": 2.0}})
    assert "| routerbench_subset | 3 | 2.0 | **auto** | 0.7000 |" in table
