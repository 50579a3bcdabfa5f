"""One pass over a build's results: every prompt's answered mask and the numbers of the rows the build will hold.

A build needs the answered mask of every prompt to know its split (which models tune, which test prompts are
complete) and the scores of the rows it samples, and the test sample is drawn among the complete test prompts, so
it is known only after the mask. Reading the 100M results of a 1M x 100 store twice (the mask, then the held rows)
took ~145 s of the build (benchmarks/scale/dask_plane.py); once, the rows known before the mask (the training
sample and every validation prompt: the stored split and the seed fix them) are kept in memory, and every cell of
a test prompt goes to a spill file on disk (24 bytes a cell: ~720 MB at 1M x 100, none of it in the driver's
memory) from which the test sample's cells are read back once the split is known.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

# A spilled cell: its matrix coordinates and numbers (the build_results columns the build holds).
SPILL = np.dtype([("i", "<i4"), ("j", "<i4"), ("score", "<f8"), ("cost", "<f8")])
# Spilled cells read back per chunk (24 MB).
READ_BACK_CELLS = 1_000_000


@dataclass(frozen=True)
class Keep:
    """What the pass keeps: the scores of `scores` and the costs of `costs` (store rows) in memory, and every cell
    of the rows where `spill` (bool, (N,)) is set on disk. A row the build later holds must be among them."""

    scores: np.ndarray
    costs: np.ndarray
    spill: np.ndarray


def _positions(rows: np.ndarray, n: int) -> np.ndarray:
    """(n,) int64: the position of each store row among `rows`, -1 where it is not one of them."""
    at = np.full(n, -1, dtype=np.int64)
    at[rows] = np.arange(len(rows))
    return at


class RowCells:
    """The kept rows' numbers, filled batch by batch (add), then taken once the build knows its rows (take)."""

    def __init__(self, keep: Keep, n_prompts: int, n_models: int) -> None:
        self._n_models = n_models
        self._score_at = _positions(keep.scores, n_prompts)
        self._cost_at = _positions(keep.costs, n_prompts)
        self._scores = np.full((len(keep.scores), n_models), np.nan)
        self._costs = np.full((len(keep.costs), n_models), np.nan)
        self._spill = keep.spill
        # Anonymous: the file goes when it is closed, or with the process if the build dies.
        self._file = tempfile.TemporaryFile(prefix="uniroute-build-cells-")  # noqa: SIM115 (closed by take/close)
        self._spilled = 0

    def add(self, batch: pa.RecordBatch) -> None:
        """One batch of build_results' cells: the kept rows' numbers stored, the spilled rows' cells written."""
        i = batch.column("i").to_numpy()
        j = batch.column("j").to_numpy()
        score = batch.column("score").to_numpy()
        cost = batch.column("cost").to_numpy()
        at = self._score_at[i]
        kept = at >= 0
        self._scores[at[kept], j[kept]] = score[kept]
        at = self._cost_at[i]
        kept = at >= 0
        self._costs[at[kept], j[kept]] = cost[kept]
        spilled = self._spill[i]
        if spilled.any():
            cells = np.empty(int(spilled.sum()), dtype=SPILL)
            for name, values in (("i", i), ("j", j), ("score", score), ("cost", cost)):
                cells[name] = values[spilled]
            cells.tofile(self._file)
            self._spilled += len(cells)

    def take(self, rows: np.ndarray, costs_for: int) -> tuple[np.ndarray, np.ndarray]:
        """(R, M) scores of the distinct store rows `rows` and the costs of the first costs_for of them, NaN where no
        result: what build_data.result_rows reads for them in a pass of its own. The spill file is closed after."""
        scores = np.full((len(rows), self._n_models), np.nan)
        costs = np.full((costs_for, self._n_models), np.nan)
        score_from = self._from_memory(scores, self._scores, self._score_at[rows])
        cost_from = self._from_memory(costs, self._costs, self._cost_at[rows[:costs_for]])
        missing = np.concatenate([rows[score_from], rows[:costs_for][cost_from]])
        if not self._spill[missing].all():  # the build asked for a row the pass did not keep: a bug, not data
            raise RuntimeError(f"build rows {missing[~self._spill[missing]][:5].tolist()} were not kept by the pass")
        score_at = np.full(len(self._spill), -1, dtype=np.int64)  # output position of each row to read back
        score_at[rows[score_from]] = np.nonzero(score_from)[0]
        cost_at = np.full(len(self._spill), -1, dtype=np.int64)
        cost_at[rows[:costs_for][cost_from]] = np.nonzero(cost_from)[0]
        try:
            self._file.seek(0)
            for _ in range(0, self._spilled, READ_BACK_CELLS):
                cells = np.fromfile(self._file, dtype=SPILL, count=READ_BACK_CELLS)
                for out, at, column in ((scores, score_at, "score"), (costs, cost_at, "cost")):
                    where = at[cells["i"]]
                    found = where >= 0
                    out[where[found], cells["j"][found]] = cells[column][found]
        finally:
            self.close()
        return scores, costs

    @staticmethod
    def _from_memory(out: np.ndarray, held: np.ndarray, at: np.ndarray) -> np.ndarray:
        """out's rows copied from the held ones where `at` finds them; the mask of the others (to read back)."""
        found = at >= 0
        out[found] = held[at[found]]
        return ~found

    def close(self) -> None:
        """The spill file closed and the kept numbers let go: taken once, and the index that holds this object lives
        to the end of the build (at 1M x 100 the kept rows' two matrices and positions were 0.1 GB of the driver)."""
        self._file.close()
        empty = np.zeros((0, self._n_models))
        self._scores = self._costs = empty
        self._score_at = self._cost_at = np.zeros(0, dtype=np.int64)
        self._spill = np.zeros(0, dtype=bool)
