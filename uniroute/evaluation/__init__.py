"""Evaluation: the paper's dynamic-pool protocol on logged results (DESIGN.md section 4).

Owns the protocol and its trials (`protocol`: the seeded LLM and prompt split; `state`: what one trial's
methods share; `trial`: one trial; `runner`: many trials on Dask and the whole evaluation), the router kinds'
tuning with the training LLMs (`candidates`, on grids that follow the data: `grids`) and the choice of the kind
to serve (`selection`, which the nightly build calls too), the deferral curves and their metrics (`curves`,
drawn on a `pool`), paired statistics (`statistics`), and what an evaluation leaves behind (`report`: JSON;
`markdown`: tables; `plots`: PNGs). It reads logs and embeddings, never the store's router versions, and writes
nothing but its output files.
"""

from uniroute.evaluation.candidates import KINDS, CandidateFits, Tuned, TuningData
from uniroute.evaluation.curves import (
    CURVE_GRID,
    Curve,
    curve_area,
    curve_metrics,
    lambda_grid,
    reach_cost,
    routed_points,
    routing_curve,
    switch_path,
    upper_envelope,
)
from uniroute.evaluation.data import EvalData, RoutingData, eval_data_from_frame, long_frame
from uniroute.evaluation.grids import GridSearch, cluster_ladder, neighbour_ladder, widening_search
from uniroute.evaluation.markdown import markdown_report, sign_test_table, summary_table, val_size_table
from uniroute.evaluation.methods import KIND_METHODS, METHOD_LABELS, METHODS, ORACLES, VAL_SIZE_METHODS
from uniroute.evaluation.pool import LabelledPool
from uniroute.evaluation.prompts import PROMPT_PARTS, prompt_embeddings, prompt_texts
from uniroute.evaluation.protocol import EvalConfig, TrialSplit, trial_split
from uniroute.evaluation.runner import evaluate, trial_results, write_outputs
from uniroute.evaluation.selection import Selection, model_row, select_kind, served_router
from uniroute.evaluation.state import TrialState
from uniroute.evaluation.statistics import sign_test
from uniroute.evaluation.trial import trial_result

__all__ = [
    "CURVE_GRID",
    "KINDS",
    "KIND_METHODS",
    "METHODS",
    "METHOD_LABELS",
    "ORACLES",
    "PROMPT_PARTS",
    "VAL_SIZE_METHODS",
    "CandidateFits",
    "cluster_ladder",
    "Curve",
    "curve_area",
    "curve_metrics",
    "eval_data_from_frame",
    "EvalConfig",
    "EvalData",
    "evaluate",
    "GridSearch",
    "LabelledPool",
    "lambda_grid",
    "long_frame",
    "markdown_report",
    "model_row",
    "neighbour_ladder",
    "prompt_embeddings",
    "prompt_texts",
    "reach_cost",
    "routed_points",
    "routing_curve",
    "RoutingData",
    "select_kind",
    "Selection",
    "served_router",
    "sign_test",
    "sign_test_table",
    "summary_table",
    "switch_path",
    "trial_result",
    "trial_results",
    "trial_split",
    "TrialSplit",
    "TrialState",
    "Tuned",
    "TuningData",
    "upper_envelope",
    "val_size_table",
    "widening_search",
    "write_outputs",
]
