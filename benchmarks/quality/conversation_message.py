"""Which user message a conversation is routed on: its first, its latest, or the mean of its turns, measured on the
shared datasets.

The gateway keeps a conversation on the model of its first routed turn. When that turn's request already carries
earlier user messages (a client that started elsewhere, a chat resumed), the router could read the first of them
or the latest. The shared datasets hold no conversations, so one is built: T prompts drawn without replacement
from the test prompts of one benchmark of the dataset (the `benchmark` column: one topic, as a conversation keeps
to one), the benchmark drawn in proportion to its test prompts. The conversation's quality is the mean score of
the one model chosen over its T turns (each turn is answered by it), its cost the mean cost likewise (a fraction
of the priciest model's mean cost). Routed on:

- `first`: turn 1's embedding; `latest`: turn T's; `mean`: the mean of the T embeddings (hindsight: every turn is
  known, which no router has when it pins the model);
- for reference, `per_turn`: each turn routed on its own message (no pinning: the model may change every turn),
  and `best_single`: the one model with the best mean test score for every conversation.

The router: per dataset, one trial of the evaluation protocol (60/10/30 split, seed `--seed`) with the `static`
embedder, `auto` choosing and tuning the kind, served over every LLM (as benchmarks.quality.default_setting), at
the product's default setting (routers.tables.default_budget) and at lambda 0. Trials redraw the conversations
(seeds seed .. seed + trials - 1); first minus latest is paired per conversation, its 95% interval the normal one
over all conversations of all trials.

Run: `nice -n 10 .venv/bin/python -m benchmarks.quality.conversation_message [--trials 5] [--conversations 2000]
[--turns 5]`; writes benchmarks/results/conversation_message.json.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.quality.default_setting import served_on
from benchmarks.runner import RESULTS_DIR, SHARED, load_average, machine_info, write_result
from uniroute.experiments.logs import eval_data_from_frame, long_frame
from uniroute.routers.rule import RoutingRule
from uniroute.routers.tables import default_budget
from uniroute.settings import Settings

DATASETS = ("routerbench_subset", "routerdc_model7", "mmlu_pro_cot29")
PINNED = ("first", "latest", "mean")


def served(name: str, cache_dir: Path, seed: int) -> tuple[RoutingRule, np.ndarray, Any, Any, np.ndarray, str]:
    """The trial's served `auto` router over every LLM (as the default-setting study serves it), every prompt's
    vector, the routing data, the split, each prompt's benchmark (topic) and the kind chosen."""
    frame = long_frame(SHARED / name / "long.parquet")
    data = eval_data_from_frame(frame)
    first = frame.drop_duplicates("prompt_id")
    topics = first.set_index(first.prompt_id.astype(str)).loc[list(data.prompt_ids), "benchmark"].astype(str).to_numpy()
    router, X, routing, split, kind = served_on(data, cache_dir, seed)
    return router, X, routing, split, topics, kind


def conversations(test: np.ndarray, topics: np.ndarray, n: int, turns: int, rng: np.random.Generator) -> np.ndarray:
    """(n, turns) prompt rows: each conversation's turns from one topic, the topic drawn by its test prompts."""
    by_topic = {t: test[topics[test] == t] for t in np.unique(topics[test])}
    usable = [t for t, rows in by_topic.items() if len(rows) >= turns]
    weights = np.array([len(by_topic[t]) for t in usable], dtype=np.float64)
    drawn = rng.choice(len(usable), size=n, p=weights / weights.sum())
    return np.stack([rng.choice(by_topic[usable[i]], size=turns, replace=False) for i in drawn])


def conversation_values(rows: np.ndarray, chosen: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """(n,) mean over each conversation's turns of matrix[turn, model] (chosen (n,) one model, or (n, T) per turn);
    a turn the model has no result for is left out, a conversation with none at all is NaN."""
    per_turn = np.broadcast_to(chosen[:, None], rows.shape) if chosen.ndim == 1 else chosen
    values = matrix[rows, per_turn]
    counts = np.sum(~np.isnan(values), axis=1)
    return np.where(counts > 0, np.nansum(values, axis=1) / np.maximum(counts, 1), np.nan)


def strategies(router: RoutingRule, X: np.ndarray, rows: np.ndarray, lam: float, best: int) -> dict[str, np.ndarray]:
    """Each strategy's model per conversation ((n,) pinned, (n, T) per turn)."""
    n, turns = rows.shape
    return {
        "first": router.route(X[rows[:, 0]], lam),
        "latest": router.route(X[rows[:, -1]], lam),
        "mean": router.route(X[rows].mean(axis=1), lam),
        "per_turn": router.route(X[rows.reshape(-1)], lam).reshape(n, turns),
        "best_single": np.full(n, best),
    }


def measure(name: str, cache_dir: Path, seed: int, trials: int, n: int, turns: int) -> dict[str, Any]:
    """Every strategy's conversation score and cost on one dataset, at the default setting and at lambda 0."""
    router, X, routing, split, topics, kind = served(name, cache_dir, seed)
    test = np.asarray(split.test)
    priciest = float(np.nanmax(np.nanmean(routing.costs[test], axis=0)))
    best = int(np.nanargmax(np.nanmean(routing.scores[test], axis=0)))
    _, default_lam, _, _ = default_budget(router, tuple(router.models))
    out: dict[str, Any] = {"dataset": name, "served": kind, "models": len(router.models),
                           "test_prompts": len(test), "topics": int(len(np.unique(topics[test]))), "settings": {}}
    for setting, lam in (("default", float(default_lam)), ("lambda 0", 0.0)):
        scores: dict[str, list[np.ndarray]] = {}
        costs: dict[str, list[np.ndarray]] = {}
        same = []
        for trial in range(trials):
            rows = conversations(test, topics, n, turns, np.random.default_rng(seed + trial))
            chosen = strategies(router, X, rows, lam, best)
            same.append(float(np.mean(chosen["first"] == chosen["latest"])))
            for strategy, models in chosen.items():
                scores.setdefault(strategy, []).append(conversation_values(rows, models, routing.scores))
                costs.setdefault(strategy, []).append(conversation_values(rows, models, routing.costs) / priciest)
        # Conversations where a compared strategy's model has no result on any turn are left out (MMLU-Pro lacks
        # some answers); how many is reported.
        diff = np.concatenate(scores["first"]) - np.concatenate(scores["latest"])
        unscored = int(np.isnan(diff).sum())
        diff = diff[~np.isnan(diff)]
        half = 1.96 * float(np.std(diff, ddof=1)) / np.sqrt(diff.size)
        out["settings"][setting] = {
            "lam": lam,
            "score": {s: float(np.nanmean(np.concatenate(v))) for s, v in scores.items()},
            "score_by_trial": {s: [float(np.nanmean(x)) for x in v] for s, v in scores.items()},
            "cost": {s: float(np.nanmean(np.concatenate(v))) for s, v in costs.items()},
            "conversations_unscored_first_or_latest": unscored,
            "first_minus_latest": float(np.mean(diff)),
            "first_minus_latest_ci95": [float(np.mean(diff)) - half, float(np.mean(diff)) + half],
            "first_minus_mean": float(np.nanmean(np.concatenate(scores["first"]) - np.concatenate(scores["mean"]))),
            "same_model_first_and_latest": float(np.mean(same)),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=None, help="embedder model files (default: the home's)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--conversations", type=int, default=2000, help="per trial and dataset")
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    args = parser.parse_args(argv)
    cache_dir = args.cache_dir or Settings().cache_dir
    started, load_before, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), load_average(), time.perf_counter()
    results = []
    for name in args.datasets.split(","):
        results.append(measure(name, cache_dir, args.seed, args.trials, args.conversations, args.turns))
        r = results[-1]
        print(f"{name} ({r['served']}, {r['models']} models, {r['topics']} topics)", flush=True)
        for setting, s in r["settings"].items():
            line = ", ".join(f"{k} {v:.4f} (cost {s['cost'][k]:.3f})" for k, v in s["score"].items())
            print(f"  {setting}: {line}; first - latest {s['first_minus_latest']:+.4f} "
                  f"[{s['first_minus_latest_ci95'][0]:+.4f}, {s['first_minus_latest_ci95'][1]:+.4f}], same model "
                  f"{s['same_model_first_and_latest']:.0%}", flush=True)
    result = {"benchmark": "quality.conversation_message", "embedder": "static", "seed": args.seed,
              "trials": args.trials, "conversations_per_trial": args.conversations, "turns": args.turns,
              "results": results,
              "command": "nice -n 10 .venv/bin/python -m benchmarks.quality.conversation_message "
                         f"--trials {args.trials} --conversations {args.conversations} --turns {args.turns}",
              "started": started, "seconds": round(time.perf_counter() - t0, 1), "load_average_before": load_before,
              "load_average_after": load_average(), "machine": machine_info()}
    print(f"wrote {write_result(result, RESULTS_DIR / 'conversation_message.json')}")


if __name__ == "__main__":
    main()
