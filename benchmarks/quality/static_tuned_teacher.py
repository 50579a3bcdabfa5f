"""Teacher (`minilm-onnx`) vectors of a seeded random order of each shared dataset's prompts, saved in chunks.

The static-tuned transfer pilot (static_tuned_transfer.py) reads whatever prefix is done: the teacher embeds ~12
prompts per CPU-second, so the three datasets' 35,762 prompts are an hour of one core; chunks let the pilot start
on a sample. Texts are what `uniroute evaluate` embeds (RouterBench: the last block).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from uniroute import experiments as ev
from uniroute.embed import make_embedder

DATASETS = {"routerbench_subset": "last-block", "routerdc_model7": "full", "mmlu_pro_cot29": "full"}


def dataset_texts(root: Path, name: str) -> tuple[list[str], list[str]]:
    """(prompt ids, embedded texts) of a shared dataset, in the evaluation's prompt order."""
    frame = ev.long_frame(root / name)
    prompts = frame.drop_duplicates("prompt_id")[["prompt_id", "prompt"]]
    prompts = prompts.assign(prompt_id=prompts["prompt_id"].astype(str)).sort_values("prompt_id")
    return list(prompts["prompt_id"]), ev.prompt_texts(list(prompts["prompt"]), DATASETS[name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("../shared/datasets"))
    parser.add_argument("--cache-dir", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    teacher = make_embedder("minilm-onnx", cache_dir=args.cache_dir, progress=False)
    plan = {}
    for name in DATASETS:
        ids, texts = dataset_texts(args.data, name)
        order = np.random.default_rng(args.seed).permutation(len(ids))
        plan[name] = (np.asarray(ids)[order], [texts[i] for i in order])
    done = {name: 0 for name in DATASETS}
    vectors: dict[str, list[np.ndarray]] = {name: [] for name in DATASETS}
    while any(done[n] < len(plan[n][0]) for n in DATASETS):
        for name in DATASETS:
            ids, texts = plan[name]
            lo = done[name]
            if lo >= len(ids):
                continue
            start = time.process_time()
            vectors[name].append(teacher.encode(texts[lo : lo + args.chunk]))
            done[name] = lo + len(vectors[name][-1])
            np.savez(args.out / f"{name}.tmp.npz", ids=ids[: done[name]], texts=np.asarray(texts[: done[name]]),
                     vectors=np.concatenate(vectors[name]), teacher_id=str(teacher.embedder_id))
            (args.out / f"{name}.tmp.npz").replace(args.out / f"{name}.npz")
            print(f"{name}: {done[name]}/{len(ids)} ({time.process_time() - start:.1f} CPU s for the chunk)",
                  flush=True)


if __name__ == "__main__":
    main()
