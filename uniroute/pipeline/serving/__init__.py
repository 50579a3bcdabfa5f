"""Serving: routing new prompts with the champion or the published snapshot, the decision records every route writes,
and the snapshots, publications and SQL users read."""
