"""Pilot: does an ensemble of the fitted kinds' estimated losses beat `auto` as served (issue 28, item 4)?

Per trial of `uniroute evaluate`'s protocol (same seed, splits, embedder and tuning; its TrialState, not a copy;
the embedder of the recorded evaluation, docs/results/<dataset>.json),
the test LLMs are routed with
  ens_0.5      the mean of K-NN's and count-aware K-means' gamma (each kind tuned as today);
  ens_val      w * gamma_knn + (1 - w) * gamma_kmeans_shrunk, w in {0.25, 0.5, 0.75} chosen on validation;
  ens_val01    the same with w in {0, 0.25, 0.5, 0.75, 1} (may fall back to either kind alone);
  multik       count-aware K-means' gamma averaged over K/2, K and 2K (the tuned K and s): Psi from several K;
  multik_knn   K-NN with multik, w in {0.25, 0.5, 0.75} chosen on validation.
"Chosen on validation": the mean Area over the selection's fresh simulated onboardings (CandidateFits
.onboarding_gammas with purpose "select": training LLMs onboarded on n_val sampled training prompts, the Area
measured on other prompts among them), the same samples for every weight; no test LLM, no test prompt.

`auto` (every registered kind tuned, selection.select_kind's rule) and ZeroRouter are measured in the same trial;
the clairvoyant MLP's Area is the evaluation's, recorded in docs/results/<dataset>.json (same seed and trials;
the share of the ZeroRouter-to-MLP gap is of the means). The pilot reports how many trials reproduce the
recorded Areas of auto, K-NN and count-aware K-means (the rest: the code changed since the evaluation ran).

Run: `OMP_NUM_THREADS=1 nice -n 10 .venv/bin/python -m benchmarks.quality.ensemble_pilot
      --dataset routerbench_subset --trials 100 --out /tmp/ens_rb.json --record routerbench_subset`
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from benchmarks.quality.onboarding_estimator_pilot import pilot_inputs
from uniroute import experiments as ev
from uniroute.routers.kinds import Tuned
from uniroute.selection.curves import curve_area
from uniroute.selection.state import TrialState
from uniroute.selection.statistics import sign_test

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results" / "ensemble_pilot.json"
WEIGHTS = (0.25, 0.5, 0.75)  # K-NN's weight in the ensemble
WEIGHTS01 = (0.0, *WEIGHTS, 1.0)
VARIANTS = ("ens_0.5", "ens_val", "ens_val01", "multik", "multik_knn")


def _val_area(gammas: list[list[tuple[np.ndarray, object]]], weights: tuple[float, ...]) -> np.ndarray:
    """(len(weights),) mean validation Area of w * first + (1 - w) * second over the simulated onboardings."""
    first, second = gammas
    return np.array([np.mean([pool.area(w * a + (1 - w) * b) for (a, pool), (b, _) in zip(first, second, strict=True)])
                     for w in weights])


def multi_k_tuned(state: TrialState, km: Tuned) -> list[Tuned]:
    """Count-aware K-means at K/2, K and 2K (within the training prompts), each with the tuned strength."""
    n_tr = state.X_train.shape[0]
    ks = sorted({max(1, km.value // 2), km.value, min(2 * km.value, n_tr)})
    return [Tuned("kmeans_shrunk", k, km.shrinkage) for k in ks]


def multi_k_test_gamma(state: TrialState, km: Tuned, n_val: int) -> np.ndarray:
    """(n_te, M_te) count-aware K-means' test gamma averaged over K/2, K and 2K: Psi from several K."""
    return np.mean([state.test_gamma(t, n_val) for t in multi_k_tuned(state, km)], axis=0)


def _multi_k(state: TrialState, km: Tuned, n_val: int) -> tuple[list[int], np.ndarray, list]:
    """The K ladder (K/2, K, 2K within the training prompts), the test gamma averaged over it, and its validation
    gammas averaged alike."""
    tuned = multi_k_tuned(state, km)
    per_k = [state.fits.onboarding_gammas(t.kind, t.value, n_val, t.shrinkage, "select") for t in tuned]
    val = [(np.mean([g[r][0] for g in per_k], axis=0), per_k[0][r][1]) for r in range(len(per_k[0]))]
    return [t.value for t in tuned], multi_k_test_gamma(state, km, n_val), val


def recorded_inputs(recorded: dict) -> tuple:
    """(routing data, prompt vectors) of a recorded evaluation (docs/results/<dataset>.json): its data file, prompt
    part and seed, and its embedder (its id's first field), so a pilot's trials pair with the recorded ones."""
    data_path = (ROOT / recorded["data"]).resolve()  # recorded relative to the checkout (or absolute)
    _, data, X = pilot_inputs(data_path / "long.parquet", recorded["prompt_part"], recorded["seed"],
                              "kmeans_shrunk", [], recorded["embedder_id"].split(":")[0])
    return data, X


def trial_row(X: np.ndarray, data, config: ev.EvalConfig, trial: int) -> dict:
    """One trial's test Areas of the kinds and the ensembles, and the weights validation chose."""
    split = ev.trial_split(data.routing, config.seed, trial, config.train_frac, config.val_frac)
    state = TrialState(X, data.routing, split, config)
    n_val = len(split.val)
    pool = state.test_pool(n_val)
    knn, km = state.tuned("knn", n_val), state.tuned("kmeans_shrunk", n_val)
    g_knn, g_km = state.test_gamma(knn, n_val), state.test_gamma(km, n_val)
    v_knn = state.fits.onboarding_gammas("knn", knn.value, n_val, 0.0, "select")
    v_km = state.fits.onboarding_gammas(km.kind, km.value, n_val, km.shrinkage, "select")
    val01 = _val_area([v_knn, v_km], WEIGHTS01)
    inner = val01[1:-1]
    w_val = WEIGHTS[int(np.argmax(inner))]
    w_val01 = WEIGHTS01[int(np.argmax(val01))]  # ties: the first, K-means alone
    ks, g_multi, v_multi = _multi_k(state, km, n_val)
    val_mk = _val_area([v_knn, v_multi], WEIGHTS)
    w_mk = WEIGHTS[int(np.argmax(val_mk))]

    def area(g: np.ndarray) -> float:
        return curve_area(pool.curve(g, config.n_lambdas))

    chosen = state.selection(n_val).chosen  # `auto` as served: every registered kind tuned, then the rule

    return {
        "trial": trial, "knn_k": knn.value, "K": km.value, "s": km.shrinkage, "multi_ks": ks,
        "w_val": w_val, "w_val01": w_val01, "w_multik_knn": w_mk,
        "val_area": {f"{w:g}": float(a) for w, a in zip(WEIGHTS01, val01, strict=True)},
        "val_area_multik_knn": {f"{w:g}": float(a) for w, a in zip(WEIGHTS, val_mk, strict=True)},
        "auto_kind": chosen,
        "area": {
            "auto": curve_area(state.kind_curve(state.tuned(chosen, n_val), n_val, pool)),
            "zero": curve_area(state.zero_curve(n_val, pool)),
            "knn": area(g_knn), "kmeans_shrunk": area(g_km),
            "ens_0.5": area(0.5 * g_knn + 0.5 * g_km),
            "ens_val": area(w_val * g_knn + (1 - w_val) * g_km),
            "ens_val01": area(w_val01 * g_knn + (1 - w_val01) * g_km),
            "multik": area(g_multi),
            "multik_knn": area(w_mk * g_knn + (1 - w_mk) * g_multi),
            **{f"ens_w{w:g}": area(w * g_knn + (1 - w) * g_km) for w in WEIGHTS},  # fixed weights, for the record
        },
    }


def summary(rows: list[dict], recorded: dict) -> dict:
    """Each variant against `auto` of the same trials: mean Area, wins-losses, sign test p, share of the gap from
    ZeroRouter (this run's) to the clairvoyant MLP (the evaluation's, same trials)."""
    n = len(rows)
    trials = [r["trial"] for r in rows]
    rec = {m: np.asarray(recorded["per_trial_area"][m])[trials] for m in ("auto", "mlp", "knn", "kmeans_shrunk")}
    auto = np.array([r["area"]["auto"] for r in rows])
    zero, mlp = float(np.mean([r["area"]["zero"] for r in rows])), float(rec["mlp"].mean())
    kinds = sorted({r["auto_kind"] for r in rows})
    out: dict = {"trials": n, "zero": zero, "mlp_recorded": mlp, "auto": float(auto.mean()),
                 "auto_recorded": float(rec["auto"].mean()),
                 "auto_gap_share": float((auto.mean() - zero) / (mlp - zero)),
                 "auto_kinds": {k: sum(r["auto_kind"] == k for r in rows) for k in kinds},
                 # trials whose Area equals the evaluation's (the rest: code changed since it ran)
                 "reproduced": {k: int(np.sum(np.isclose([r["area"][k] for r in rows], rec[k], atol=1e-9)))
                                for k in ("auto", "knn", "kmeans_shrunk")},
                 "chosen_w_val": {f"{w:g}": sum(r["w_val"] == w for r in rows) for w in WEIGHTS},
                 "chosen_w_val01": {f"{w:g}": sum(r["w_val01"] == w for r in rows) for w in WEIGHTS01},
                 "chosen_w_multik_knn": {f"{w:g}": sum(r["w_multik_knn"] == w for r in rows) for w in WEIGHTS},
                 "variants": {}}
    names = ["knn", "kmeans_shrunk", *VARIANTS, *(f"ens_w{w:g}" for w in WEIGHTS)]
    print(f"trials {n}; zero {zero:.4f}  MLP {mlp:.4f}  auto {auto.mean():.4f} ({100 * out['auto_gap_share']:.0f}% of "
          f"the gap; recorded {out['auto_recorded']:.4f}); reproduced {out['reproduced']}; auto {out['auto_kinds']}")
    for name in names:
        x = np.array([r["area"][name] for r in rows])
        t = sign_test(x, auto)
        d = x - auto
        out["variants"][name] = {"area": float(x.mean()), "minus_auto": float(d.mean()),
                                 "half_width": float(2 * d.std(ddof=1) / np.sqrt(n)) if n > 1 else None,
                                 "wins": t["wins"], "losses": t["losses"], "p": t["p"],
                                 "gap_share": float((x.mean() - zero) / (mlp - zero))}
        v = out["variants"][name]
        print(f"{name:14s} {v['area']:.4f} {v['minus_auto']:+.4f} {t['wins']}-{t['losses']} p={t['p']:.3g} "
              f"gap {100 * v['gap_share']:.0f}%")
    return out


LABELS = {"kmeans_shrunk": "count-aware K-means (auto's usual kind)", "knn": "K-NN",
          "ens_0.5": "mean of K-NN and count-aware K-means", "ens_val": "ensemble, w in {.25, .5, .75} on validation",
          "ens_val01": "ensemble, w in {0, .25, .5, .75, 1} on validation",
          "multik": "count-aware K-means averaged over K/2, K, 2K",
          "multik_knn": "K-NN + K/2-K-2K K-means, w on validation",
          "ens_w0.25": "ensemble, w = 0.25 fixed (chosen after seeing RouterBench: not admissible)"}


def markdown(results: dict) -> str:
    """The results page's table: per dataset, each variant's Area against auto and its share of the oracle gap."""
    lines = ["| dataset | trials | load | router | Area | − auto | wins-losses vs auto | p | share of the gap |",
             "|---|---:|---:|---|---:|---:|---:|---:|---:|"]
    for dataset, r in results.items():
        head = f"| {dataset} | {r['trials']} | {r['load']:.1f} |"
        lines.append(f"{head} ZeroRouter / MLP (clairvoyant) | {r['zero']:.4f} / {r['mlp_recorded']:.4f} | | | | |")
        lines.append(f"{head} **auto** | {r['auto']:.4f} | | | | {100 * r['auto_gap_share']:.0f}% |")
        for name, label in LABELS.items():
            v = r["variants"][name]
            lines.append(f"{head} {label} | {v['area']:.4f} | {v['minus_auto']:+.4f} | {v['wins']}-{v['losses']} | "
                         f"{v['p']:.2g} | {100 * v['gap_share']:.0f}% |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--dataset", required=True, help="a folder of ../shared/datasets with docs/results/<it>.json")
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--first", type=int, default=0, help="continue a raw --out from this trial")
    p.add_argument("--out", type=Path, required=True, help="per-trial rows (JSON), rewritten after every trial")
    p.add_argument("--from-raw", action="store_true", help="summarise an --out of an earlier run, run nothing")
    p.add_argument("--record", action="store_true", help="keep the summary under the dataset in " + str(RESULTS))
    p.add_argument("--markdown", action="store_true", help="print the recorded datasets' table, run nothing")
    a = p.parse_args()
    if a.markdown:
        print(markdown(json.loads(RESULTS.read_text())))
        return
    recorded = json.loads((ROOT / "docs" / "results" / f"{a.dataset}.json").read_text())
    rows = json.loads(a.out.read_text()) if (a.from_raw or a.first) else []
    if not a.from_raw:
        config = ev.EvalConfig(seed=recorded["seed"], methods=("knn", "kmeans_shrunk"))
        data, X = recorded_inputs(recorded)
        t0 = time.perf_counter()
        with threadpool_limits(1):
            for trial in range(a.first, a.trials):
                rows.append(trial_row(X, data, config, trial))
                a.out.write_text(json.dumps(rows))
                print(f"trial {trial} {time.perf_counter() - t0:.0f}s", flush=True)
    out = summary(rows, recorded)
    if a.record:
        results = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
        results[a.dataset] = {
            "command": f"python -m benchmarks.quality.ensemble_pilot --dataset {a.dataset} --trials {len(rows)}",
            "seed": recorded["seed"], "embedder_id": recorded["embedder_id"], "load": os.getloadavg()[0], **out,
            "per_trial": rows}
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
