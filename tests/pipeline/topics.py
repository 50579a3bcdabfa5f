"""Hand-written prompts on three topics (no third-party text) and per-topic losses that make each topic's
specialist the best model there, so a K-means router on real embeddings routes differently by cluster."""

from __future__ import annotations

import numpy as np

TOPICS = {
    "math": ["What is 17 times 23?", "Solve for x: 3x + 5 = 20.", "Is 91 a prime number?",
             "Compute the derivative of x squared plus 4x.", "What is the square root of 144?",
             "Add 1234 and 5678.", "Find the area of a circle with radius 3.", "Simplify 12/18."],
    "cooking": ["How long should I boil an egg for a soft yolk?", "What can I use instead of butter in cookies?",
                "How do I make a simple tomato sauce?", "At what temperature should I roast a chicken?",
                "How do I keep rice from getting sticky?", "What spices go well with lentil soup?",
                "How do I knead bread dough by hand?", "How long do pancakes cook on each side?"],
    "code": ["Write a Python function that reverses a list.", "How do I read a CSV file with pandas?",
             "What does a segmentation fault mean in C?", "Explain recursion with a short example in Python.",
             "How do I create a virtual environment in Python?", "Fix this SQL: SELEC name FROM users;",
             "What is the difference between a list and a tuple in Python?", "How do I undo the last git commit?"],
}
PROMPTS = [p for group in TOPICS.values() for p in group]
NEW_PROMPTS = ["What is 9 plus 10?", "How do I bake a sponge cake?", "How do I sort a dict by value in Python?",
               "Multiply 12 by 12.", "What goes in a Greek salad?"]
MODELS = ("mathwiz", "chef", "coder", "generalist")
COSTS = np.array([2.0, 1.0, 3.0, 10.0])


def topic_losses() -> np.ndarray:
    """(len(PROMPTS), len(MODELS)) losses: each specialist right on its own topic only, the generalist 0.25."""
    topic = np.repeat(np.arange(len(TOPICS)), [len(g) for g in TOPICS.values()])
    losses = np.full((len(PROMPTS), len(MODELS)), 1.0)
    losses[np.arange(len(PROMPTS)), topic] = 0.0
    losses[:, 3] = 0.25
    return losses
