"""Tiny synthetic benchmark logs whose LLMs differ by topic, and embeddings that carry the topic."""

from __future__ import annotations

import numpy as np
import pandas as pd

TOPIC_WORDS = [
    ["integral", "derivative", "matrix", "prime", "equation", "theorem"],
    ["python", "function", "loop", "compile", "array", "recursion"],
    ["enzyme", "protein", "cell", "membrane", "gene", "mitosis"],
    ["treaty", "empire", "revolution", "dynasty", "parliament", "war"],
]


def synthetic_long(n_prompts: int = 300, n_models: int = 8, seed: int = 0) -> pd.DataFrame:
    """Prompts from 4 topics (text made of topic words); each model is strong on some topics; one has no cost."""
    rng = np.random.default_rng(seed)
    topic = rng.integers(0, len(TOPIC_WORDS), n_prompts)
    skill = rng.uniform(0.1, 0.95, (n_models, len(TOPIC_WORDS)))
    base_cost = np.linspace(1.0, 8.0, n_models)
    rows = []
    for i in range(n_prompts):
        words = rng.choice(TOPIC_WORDS[topic[i]], 5).tolist() + [f"w{rng.integers(50)}"]
        text = f"question {i}: " + " ".join(words)
        for m in range(n_models):
            cost = None if m == n_models - 1 else float(base_cost[m] * rng.uniform(0.9, 1.1))
            rows.append((f"p{i:04d}", text, f"model-{m}", float(rng.random() < skill[m, topic[i]]), cost))
    return pd.DataFrame(rows, columns=["prompt_id", "prompt", "model", "score", "cost"])


def synthetic_embeddings(data, seed: int = 0):
    """Embeddings that carry the topic: a bag of topic words projected to 16 dimensions, L2-normalised."""
    rng = np.random.default_rng(seed)
    vocab = {w: j for j, w in enumerate(w for ws in TOPIC_WORDS for w in ws)}
    proj = rng.standard_normal((len(vocab), 16))
    X = np.zeros((len(data.prompts), 16))
    for i, text in enumerate(data.prompts):
        for w in text.split():
            if w in vocab:
                X[i] += proj[vocab[w]]
    X += 0.3 * rng.standard_normal(X.shape)
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


