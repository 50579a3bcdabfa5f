"""MLflow's scoring server writing its answers with CPython's C JSON encoder: the same text, a fifth of the time.

The server (mlflow/pyfunc/scoring_server, `predictions_to_json`) writes each answer with `json.dump(obj, stream,
cls=NumpyEncoder)`. To a stream, CPython's json runs its pure-Python encoder (`iterencode` with `_one_shot=False`;
the C encoder serves only `json.dumps`): ~5 ms per 100 rows of the router's 14 fields, as much as deciding them.
MLflow has no option for it (checked in MLflow 3's source). So, in a process MLflow marks as serving, the `json`
the server's module calls is given a `dump` that writes `json.dumps` of the same object with the same arguments
as one string: the same encoder class, the same text (the C encoder formats floats, NaN, keys and `default`'s
results as the Python one does; tests/pipeline/tracking/test_served_json.py compares MLflow's own writers before
and after on NaN, None, infinities, numpy values, nesting and unicode). Every other use of `json` by the server
(its `loads`, its errors) is the module itself. `restore_stream_json` undoes it.
"""

from __future__ import annotations

import json
from typing import IO, Any


class OneShotJson:
    """The json module with `dump` writing `dumps`' whole text at once (the C encoder) to the stream."""

    @staticmethod
    def dump(obj: Any, fp: IO[str], **kwargs: Any) -> None:
        fp.write(json.dumps(obj, **kwargs))

    def __getattr__(self, name: str) -> Any:
        return getattr(json, name)


def use_one_shot_json() -> None:
    """Have MLflow's scoring server (this process's) write answers with the C encoder; idempotent."""
    from mlflow.pyfunc import scoring_server

    if not isinstance(scoring_server.json, OneShotJson):
        scoring_server.json = OneShotJson()  # type: ignore[assignment]  # a stand-in for the module


def restore_stream_json() -> None:
    """MLflow's scoring server back on the json module as it ships."""
    from mlflow.pyfunc import scoring_server

    scoring_server.json = json
