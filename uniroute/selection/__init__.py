"""Selection: how the nightly build (and every trial of an experiment) tunes the router kinds and chooses one.

Owns the data a build or trial tunes on (`data`: score and cost matrices; `split`: which LLMs and prompts play
which role), the simulated-onboarding engine that tunes every registered router kind with the training LLMs
only (`candidates`, searching ladders that follow the data: `grids`), the choice of the kind to serve
(`selection`, with bootstrap uncertainty), the tuning state a build or trial shares across kinds and validation
sizes (`state`), and the deferral curves, their metrics and the pools they are drawn on (`curves`, `pool`,
`statistics`). Plain numpy in, numpy and small records out: it never touches the store, MLflow or Prefect,
and never imports the experiment harness (`uniroute/experiments/`).
"""
