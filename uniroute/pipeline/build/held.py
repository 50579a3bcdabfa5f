"""What a build holds of the store's rows in the driver: which rows it tunes on (TuningRows, drawn by
build._tuning_rows) and their numbers and vectors (HeldRows)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from uniroute import store
from uniroute.pipeline.build.matrices import StoreIndex, hash_vectors, result_rows, vector_rows
from uniroute.selection.data import RoutingData
from uniroute.selection.split import TrialSplit
from uniroute.selection.state import StateConfig, TrialState


@dataclass(frozen=True, eq=False)
class TuningRows:
    """What the kinds are tuned and scored on: the sampled store rows, renumbered into the state's own rows.

    Where the build samples, the state holds only the sampled rows (its split renumbered into them): a state
    over every row would copy the (N, M) losses (0.8 GB at 1M x 100) and read only the samples. The rows' values
    are the same either way, so tuning, selection and evaluation are unchanged.
    """

    sample: TrialSplit  # the tuning and scoring prompts as store rows (the build's split when nothing is sampled)
    rows: np.ndarray  # store rows the state holds, in its order (every row, in order, when nothing is sampled)
    state_split: TrialSplit  # sample, renumbered into `rows`


@dataclass(frozen=True, eq=False)
class HeldRows:
    """The only rows of the store the driver holds numbers for: the tuning rows' vectors, scores and costs; every
    other validation prompt's vector is read when its Psi needs it (`vectors`: the routers' Psi assigns them to
    clusters; their losses are summed by DuckDB, psi_data.val_psi). At 1M prompts x 100 LLMs the scores and vectors
    of 75k rows (50k training, 5k validation, 20k test) instead of every row: the driver's memory follows the
    samples, not the store (the other 95k validation vectors held through the tuning were another 0.1 GB). The
    state is a view of these arrays (a copy was another 0.2 GB at 1M x 100)."""

    rows: np.ndarray  # store rows: the tuning rows (state order), then the validation prompts not among them
    n_tuning: int
    X: np.ndarray  # (n_tuning, d) float32
    scores: np.ndarray  # (n_tuning, M) float64, NaN where no result
    costs: np.ndarray  # (n_tuning, M)
    hashes: pa.Array | None = None  # (R,) the rows' text hashes: the others' vectors are read by them
    embedder_id: str = ""

    @classmethod
    def load(cls, con: store.Connection, index: StoreIndex, tuning: TuningRows, val: np.ndarray, embedder_id: str,
             dim: int) -> HeldRows:
        rows = np.concatenate([tuning.rows, np.setdiff1d(val, tuning.rows)])
        if index.cells is not None:  # kept by load_store_index's pass (_keep)
            scores, costs = index.cells.take(tuning.rows, len(tuning.rows))
        else:
            scores, costs = result_rows(con, tuning.rows, len(index.models))
        return cls(rows, len(tuning.rows), vector_rows(con, index, tuning.rows, embedder_id, dim), scores, costs,
                   index.text_hashes.take(pa.array(rows, pa.int64())), embedder_id)

    def at(self, store_rows: np.ndarray) -> np.ndarray:
        """Positions of these store rows (all held) among the held ones."""
        order = np.argsort(self.rows)
        return order[np.searchsorted(self.rows, store_rows, sorter=order)]

    def vectors(self, con: store.Connection, at: np.ndarray) -> np.ndarray:
        """(len(at), d) the vectors of the held rows at these positions: the tuning rows' from memory, the others'
        read from the embedding dataset (the same float32 values)."""
        out = np.empty((len(at), self.X.shape[1]), dtype=np.float32)
        tuning = at < self.n_tuning
        out[tuning] = self.X[at[tuning]]
        if not tuning.all():
            # Held rows past the tuning ones come with their text hashes.
            out[~tuning] = hash_vectors(con, self.hashes.take(  # type: ignore[union-attr]
                pa.array(at[~tuning], pa.int64())), self.embedder_id, self.X.shape[1])
        return out

    def state(self, tuning: TuningRows, models: Sequence[str], config: StateConfig | None = None) -> TrialState:
        """The trial state over the tuning rows (views of the held arrays)."""
        n = self.n_tuning
        routing = RoutingData(models=tuple(models), scores=self.scores[:n], costs=self.costs[:n])
        return TrialState(self.X[:n], routing, tuning.state_split, config)
