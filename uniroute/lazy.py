"""A package's names imported from their modules on first use (PEP 562), so that importing the package costs
nothing: `uniroute route` loads the routing code, not the build's tuning engine, Parquet or DuckDB."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(namespace: dict[str, Any], module_of: Mapping[str, str]) -> Callable[[str], Any]:
    """The module-level `__getattr__` of the package whose globals() is namespace: a name of module_of is imported
    from its module (a full dotted name, or one relative to the package) the first time it is asked for, and kept
    in the package's namespace so later look-ups find it without this hook."""
    package = namespace["__name__"]

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module if "." in module else f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
