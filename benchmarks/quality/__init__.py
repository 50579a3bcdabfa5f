"""Routing quality measured beyond the evaluation protocol's tables: whether `--max-cost` holds on held-out traffic
(`max_cost`)."""
