"""The default setting of a router and pool, computed once per machine: `uniroute route` without --budget or
--lambda reads it from a small file in the cache instead of building the routing tables again (most of a one-prompt
decision's time). A stored router version never changes, so its id, the pool and its costs name the answer."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

from uniroute.routers.serialize import AnyRouter
from uniroute.routers.tables import default_budget

FOLDER = "default-settings"


def _key(router_id: str, router: AnyRouter, pool: Sequence[str]) -> str:
    digest = hashlib.sha256(json.dumps([router_id, list(router.models), list(pool)]).encode())
    digest.update(router.costs.tobytes())  # costs are what a price change would move
    return digest.hexdigest()[:32]


def remembered_default(folder: Path, router_id: str, router: AnyRouter, pool: Sequence[str]) -> tuple[float, float]:
    """(budget, lambda) of the default setting (routers.tables.default_budget), from folder when it was computed
    before, else computed and written there (atomically; a folder that cannot be written only loses the memo)."""
    path = Path(folder) / FOLDER / f"{_key(router_id, router, pool)}.json"
    try:
        saved = json.loads(path.read_text())
        return float(saved["budget"]), float(saved["lam"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    budget, lam, _, _ = default_budget(router, tuple(pool))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        with os.fdopen(handle, "w") as out:
            json.dump({"router_id": router_id, "pool": list(pool), "budget": budget, "lam": lam}, out)
        os.replace(tmp, path)
    except OSError:
        pass
    return float(budget), float(lam)
