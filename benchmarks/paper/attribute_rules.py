"""Rule-made prompt-attribute labels, for the attribute-embedder experiment where no LLM annotator is reachable.

The paper has Gemini 1.5 Pro label seven difficulty attributes; this machine has no LLM endpoint, so these
labels come from a small, fixed rule set over features of the prompt text (its last block: the question
after any few-shot demonstrations), the same rules for every benchmark and never its name. They are a crude
stand-in for an LLM's judgement, and the results that use them say so. The labels file holds prompt ids and
0/1 values only, no prompt text.

Run: `.venv/bin/python -m benchmarks.paper.attribute_rules --data ../shared/datasets/routerbench_subset --out FILE.csv`
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd

from uniroute.embed.attributes import ATTRIBUTES
from uniroute.experiments.logs import long_frame
from uniroute.experiments.prompts import prompt_texts

OPTION_LINE = re.compile(r"^\s*\(?[A-E][).:]\s", re.MULTILINE)
SENTENCE_END = re.compile(r"[.?!](\s|$)")
WORDS = {
    "domain_knowledge": (
        "cell", "energy", "temperature", "plant", "animal", "rock", "mineral", "planet", "gravity", "force", "heat",
        "electric", "chemical", "molecule", "atom", "species", "organism", "soil", "climate", "moon", "earth",
        "mass", "speed", "prime", "integer", "matrix", "algorithm", "protein", "gene", "fossil", "magnet", "solar",
    ),
    "problem_solving": ("calculate", "find", "how many", "determine", "solve", "compute", "count", "check whether",
                        "which of", "most likely", "best explains"),
    "creativity": ("story", "poem", "imagine", "invent", "creative", "design a", "write a letter", "slogan"),
    "technical_accuracy": ("function", "python", "list", "string", "integer", "array", "regex", "tuple",
                           "dictionary", "digit", "binary", "matrix", "return", "sorted", "index"),
    "real_world_application": ("people", "person", "home", "house", "money", "buy", "store", "school", "car", "food",
                               "cook", "job", "work", "family", "friend", "doctor", "weather", "city", "farm",
                               "he ", "she "),
}


def _has_any(text: str, words: tuple[str, ...]) -> bool:
    return any(word in text for word in words)


def attribute_labels(text: str) -> dict[str, int]:
    """The seven attributes of one prompt by the rules (text: the prompt's last block)."""
    lower = text.lower()
    question = OPTION_LINE.split(text)[0]  # the stem before any lettered options
    labels = {
        "specificity": int(len(OPTION_LINE.findall(text)) >= 2 or "answer:" in lower or "return" in lower),
        "complexity": int(len(question) > 180 or len(SENTENCE_END.findall(question)) >= 3),
    }
    for name, words in WORDS.items():
        labels[name] = int(_has_any(lower, words))
    labels["problem_solving"] = int(labels["problem_solving"] or bool(re.search(r"\d", question)))
    return {name: labels[name] for name in ATTRIBUTES}


def labels_frame(frame: pd.DataFrame, part: str = "last-block") -> pd.DataFrame:
    """prompt_id and the seven 0/1 attributes of every prompt of a long frame."""
    prompts = frame.drop_duplicates("prompt_id").sort_values("prompt_id")
    rows = [attribute_labels(text) for text in prompt_texts(prompts["prompt"].tolist(), part)]
    out = pd.DataFrame(rows, columns=list(ATTRIBUTES))
    out.insert(0, "prompt_id", prompts["prompt_id"].astype(str).to_numpy())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--prompt-part", default="last-block")
    args = parser.parse_args()
    frame = long_frame(args.data)
    labels = labels_frame(frame, args.prompt_part)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    labels.to_csv(args.out, index=False)
    benchmark = frame.drop_duplicates("prompt_id").set_index("prompt_id")["benchmark"]
    rates = labels.set_index("prompt_id").groupby(benchmark.reindex(labels.prompt_id).to_numpy()).mean().round(3)
    print(f"wrote {len(labels)} prompts' labels to {args.out}; share of prompts with each attribute:")
    print(rates.T.to_string())


if __name__ == "__main__":
    main()
