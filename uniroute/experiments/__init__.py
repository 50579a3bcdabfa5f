"""Experiments: the paper's dynamic-pool protocol on logged results (DESIGN.md section 4), a side branch.

Owns the protocol and its trials (`protocol`: the seeded LLM and prompt split; `trial`: one trial; `runner`:
many trials on Dask and the whole evaluation; `oracle_curve`: the clairvoyant upper bounds), the logs it reads
(`logs`), what text of a prompt is embedded (`prompts`), the methods it compares (`methods`) and what an
evaluation leaves behind (`report`: JSON; `markdown`: tables; `plots`: PNGs). Beyond the paper's table:
`pairwise` (routers from arena-style battles), the transfer protocol (`transfer`, `transfer_trial`,
`pairwise_transfer`, `transfer_run`), `quality` (logs without costs), `attribute_embeddings` and
`similarity_map`. It tunes and scores with the build's own selection engine (`uniroute/selection/`), so what it
measures is what the build serves; the pipeline never imports it. It writes nothing but its output files.
"""

from uniroute.experiments.logs import eval_data_from_frame, long_frame
from uniroute.experiments.markdown import markdown_report, sign_test_table, summary_table, val_size_table
from uniroute.experiments.methods import (
    DEFAULT_METHODS,
    KIND_METHODS,
    METHOD_LABELS,
    METHODS,
    ORACLES,
    VAL_SIZE_METHODS,
)
from uniroute.experiments.prompts import PROMPT_PARTS, prompt_texts
from uniroute.experiments.protocol import EvalConfig, trial_split
from uniroute.experiments.quality import has_costs, protocol_oracles, quality_markdown, quality_report, unit_cost_data
from uniroute.experiments.runner import evaluate, trial_results, write_outputs
from uniroute.experiments.transfer import (
    PAIRWISE_TRANSFER_METHODS,
    TRANSFER_METHODS,
    TransferConfig,
    TransferData,
    transfer_data,
)
from uniroute.experiments.transfer_run import evaluate_transfer, read_log, write_transfer_outputs
from uniroute.experiments.trial import trial_result
from uniroute.routers.kinds import GridSearch, cluster_ladder, neighbour_ladder
from uniroute.selection.candidates import KINDS, CandidateFits, Tuned, TuningData
from uniroute.selection.curves import (
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
from uniroute.selection.data import EvalData, RoutingData
from uniroute.selection.grids import widening_search
from uniroute.selection.scored_pool import LabelledPool
from uniroute.selection.selection import Selection, model_row, select_kind, served_router
from uniroute.selection.split import TrialSplit
from uniroute.selection.state import TrialState
from uniroute.selection.statistics import sign_test

__all__ = [
    "CandidateFits",
    "cluster_ladder",
    "Curve",
    "curve_area",
    "CURVE_GRID",
    "curve_metrics",
    "DEFAULT_METHODS",
    "eval_data_from_frame",
    "EvalConfig",
    "EvalData",
    "evaluate",
    "evaluate_transfer",
    "GridSearch",
    "has_costs",
    "KIND_METHODS",
    "KINDS",
    "LabelledPool",
    "lambda_grid",
    "long_frame",
    "markdown_report",
    "METHOD_LABELS",
    "METHODS",
    "model_row",
    "neighbour_ladder",
    "ORACLES",
    "PAIRWISE_TRANSFER_METHODS",
    "PROMPT_PARTS",
    "prompt_texts",
    "protocol_oracles",
    "quality_markdown",
    "quality_report",
    "reach_cost",
    "read_log",
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
    "transfer_data",
    "TRANSFER_METHODS",
    "TransferConfig",
    "TransferData",
    "trial_result",
    "trial_results",
    "trial_split",
    "TrialSplit",
    "TrialState",
    "Tuned",
    "TuningData",
    "unit_cost_data",
    "upper_envelope",
    "VAL_SIZE_METHODS",
    "val_size_table",
    "widening_search",
    "write_outputs",
    "write_transfer_outputs",
]
