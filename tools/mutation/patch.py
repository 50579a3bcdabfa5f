"""Put a mutated module into the running process without re-importing anything.

The mutated file is executed into a scratch namespace; then every function of the real module (top level and in
classes, through decorators' __wrapped__) gets the mutated function's code, defaults and all, and changed
module or class constants are rebound. Objects other modules imported by name (`from m import f`) are the same
function objects, so they run the mutant too; only a constant another module copied at import keeps its old
value, and a subprocess a test starts imports the file from disk, unmutated.
"""

from __future__ import annotations

import ast
import types
from collections.abc import Iterator

import numpy as np


def _functions(owner: object) -> Iterator[tuple[str, types.FunctionType]]:
    """(name, function) for each plain function, method, static/class method and property accessor."""
    for name, value in vars(owner).items():
        if isinstance(value, staticmethod | classmethod):
            value = value.__func__
        if isinstance(value, property):
            for part, accessor in (("fget", value.fget), ("fset", value.fset)):
                if isinstance(accessor, types.FunctionType):
                    yield f"{name}.{part}", _unwrap(accessor)
            continue
        if isinstance(value, types.FunctionType):
            yield name, _unwrap(value)


def _unwrap(func: types.FunctionType) -> types.FunctionType:
    while isinstance(getattr(func, "__wrapped__", None), types.FunctionType):
        func = func.__wrapped__
    return func


def _same(a: object, b: object) -> bool:
    """Whether a constant is unchanged (numpy arrays compared by value, anything else by ==, errors: changed)."""
    try:
        if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
            return bool(np.array_equal(a, b))
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an incomparable pair is treated as changed
        return False


def _patch_owner(real: object, fresh: object, depth: int = 0) -> int:
    """Move code and constants from fresh (the mutant's object) into real; returns how many things changed."""
    changed = 0
    fresh_funcs = dict(_functions(fresh))
    for name, func in _functions(real):
        new = fresh_funcs.get(name)
        # Skip what the module did not write itself (dataclass-generated methods, imported functions).
        if new is None or func.__module__ != real_module_name(real) or func.__code__.co_filename != FILE[0]:
            continue
        if func.__code__ != new.__code__ or func.__defaults__ != new.__defaults__:
            func.__code__, func.__defaults__, func.__kwdefaults__ = new.__code__, new.__defaults__, new.__kwdefaults__
            changed += 1
    for name, value in vars(real).items():
        if name.startswith("__") or name not in vars(fresh):
            continue
        new = vars(fresh)[name]
        if isinstance(value, type) and depth == 0 and value.__module__ == real_module_name(real):
            changed += _patch_owner(value, new, depth + 1)
        elif not isinstance(value, types.FunctionType | types.ModuleType | type | staticmethod | classmethod
                            | property) and not _same(value, new):
            setattr(real, name, new) if isinstance(real, type) else vars(real).__setitem__(name, new)
            changed += 1
    return changed


FILE = [""]  # the mutated module's file, set by apply


def real_module_name(owner: object) -> str:
    return owner.__name__ if isinstance(owner, types.ModuleType) else owner.__module__


def apply(module: types.ModuleType, tree: ast.Module) -> int:
    """Patch module with the mutated tree; returns how many functions or constants changed (0: nothing did)."""
    FILE[0] = module.__file__
    fresh = types.ModuleType(module.__name__)
    fresh.__dict__.update(__file__=module.__file__, __package__=module.__package__, __spec__=module.__spec__)
    exec(compile(tree, module.__file__, "exec"), fresh.__dict__)  # noqa: S102 - the point of the tool
    return _patch_owner(module, fresh)
