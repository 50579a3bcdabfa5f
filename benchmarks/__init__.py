"""Speed, memory and quality measurements, grouped by what they measure; every figure the README and docs/ quote.

- `runner`: the one runner and measurement module (`make bench` = `python -m benchmarks.runner`): wall and CPU
  seconds, load average, peak memory, machine and commit, and the JSON each benchmark writes to
  benchmarks/results/.
- `speed/`: how fast one thing is (routing, `uniroute route`, ingest, the embedders, the evaluation) and the
  speed table of docs/results.md generated from their results (`speed.table`).
- `scale/`: the whole pipeline at size (`scale.pipeline`: the mmlu_pro_cot29 build, onboarding and publish, a
  1M x 100 synthetic build, start-up imports) and the library operations its sections call.
- `quality/`: routing quality as the docs report it (docs/results.md and its headline quality table from the
  evaluation JSONs; docs/results/embedders.md) and the block rewriter both generated tables use.
- `paper/`: the paper's further experiments (pairwise preferences, transfer, prompt attributes, LLM
  similarity), their rule-made attribute labels, and the page docs/results/paper_extensions.md.

Every group imports the runner; beyond it, speed/ borrows scale.operations (ingest), quality.embedders_table and
quality.readme_block (the pages its results feed), and no import goes the other way: benchmarks/ has no import
cycle (tests/test_architecture.py).
"""
