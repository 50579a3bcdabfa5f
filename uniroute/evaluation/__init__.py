"""Evaluation: the paper's dynamic-pool protocol on logged results (DESIGN.md section 4).

Owns the protocol and its trials (`protocol`: the seeded LLM and prompt split; `state`: the fits one trial's
methods share; `trial`: one trial; `runner`: many trials on Dask and the whole evaluation), the deferral
curves and their metrics (`curves`), paired statistics (`statistics`), hyper-parameter grids (`grids`), and
what an evaluation leaves behind (`report`: JSON; `markdown`: tables; `plots`: PNGs). Beyond the paper's table:
`pairwise` (routers from arena-style battles), the transfer protocol (`transfer`, `transfer_trial`,
`pairwise_transfer`, `transfer_run`), `quality` (logs without costs), `attribute_embeddings` and
`similarity_map`. It reads logs and embeddings, never the store's router versions, and writes nothing but its
output files.
"""

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
from uniroute.evaluation.grids import candidate_grid, kmeans_candidates, knn_candidates, learned_map_candidates
from uniroute.evaluation.markdown import markdown_report, sign_test_table, summary_table, val_size_table
from uniroute.evaluation.methods import DEFAULT_METHODS, METHOD_LABELS, METHODS, ORACLES, VAL_SIZE_METHODS
from uniroute.evaluation.prompts import PROMPT_PARTS, prompt_embeddings, prompt_texts
from uniroute.evaluation.protocol import EvalConfig, TrialSplit, trial_split
from uniroute.evaluation.quality import (
    has_costs,
    protocol_oracles,
    quality_markdown,
    quality_report,
    unit_cost_data,
)
from uniroute.evaluation.runner import evaluate, trial_results, write_outputs
from uniroute.evaluation.state import TrialState
from uniroute.evaluation.statistics import sign_test
from uniroute.evaluation.transfer import (
    PAIRWISE_TRANSFER_METHODS,
    TRANSFER_METHODS,
    TransferConfig,
    TransferData,
    transfer_data,
)
from uniroute.evaluation.transfer_run import evaluate_transfer, read_log, write_transfer_outputs
from uniroute.evaluation.trial import trial_result

__all__ = [
    "CURVE_GRID",
    "Curve",
    "DEFAULT_METHODS",
    "EvalConfig",
    "EvalData",
    "METHODS",
    "METHOD_LABELS",
    "ORACLES",
    "PAIRWISE_TRANSFER_METHODS",
    "PROMPT_PARTS",
    "RoutingData",
    "TRANSFER_METHODS",
    "TransferConfig",
    "TransferData",
    "TrialSplit",
    "TrialState",
    "VAL_SIZE_METHODS",
    "candidate_grid",
    "curve_area",
    "curve_metrics",
    "eval_data_from_frame",
    "evaluate",
    "evaluate_transfer",
    "has_costs",
    "kmeans_candidates",
    "knn_candidates",
    "lambda_grid",
    "learned_map_candidates",
    "long_frame",
    "markdown_report",
    "prompt_embeddings",
    "prompt_texts",
    "protocol_oracles",
    "quality_markdown",
    "quality_report",
    "reach_cost",
    "read_log",
    "routed_points",
    "routing_curve",
    "sign_test",
    "sign_test_table",
    "summary_table",
    "switch_path",
    "transfer_data",
    "trial_result",
    "trial_results",
    "trial_split",
    "unit_cost_data",
    "upper_envelope",
    "val_size_table",
    "write_outputs",
    "write_transfer_outputs",
]
