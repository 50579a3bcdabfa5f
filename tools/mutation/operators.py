"""The mutants of one source file: small AST changes a careless edit could make, each with a stable key.

Operators: comparison swaps (< <=, > >=, == !=, in / not in, is / is not), arithmetic swaps (+ -, * /, // /, % *),
boolean swaps (and / or), `not` dropped, a number tweaked (0 -> 1, n -> n + 1), True/False swapped, and a
statement deleted (a call, an assignment to an attribute or item, a raise, a return, a continue or break).
String constants are not mutated: most are messages whose wording no test should pin.

A key names the enclosing function, the operator and the source text of the node, plus its rank among identical
ones in that function, so equivalent.json entries survive unrelated edits that move lines.
"""

from __future__ import annotations

import ast
import copy
from collections import Counter
from dataclasses import dataclass

COMPARE_SWAPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                 ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
BINOP_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult, ast.FloorDiv: ast.Div,
               ast.Mod: ast.Mult, ast.Pow: ast.Mult, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd}
BOOL_SWAPS = {ast.And: ast.Or, ast.Or: ast.And}
DELETABLE = (ast.Expr, ast.Raise, ast.Return, ast.Continue, ast.Break, ast.AugAssign)


@dataclass(frozen=True)
class Mutant:
    key: str  # "<function>: <operator>: <source>#<rank>"
    line: int
    path: tuple[int, ...]  # node index in ast.walk order of the parsed file, then what to do there
    operator: str


def _skip_statement(node: ast.stmt) -> bool:
    """Docstrings, `...`, log calls and abstract stubs' `raise NotImplementedError`: deleting them changes nothing
    a test should see (or nothing that runs)."""
    if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Name) and node.exc.id == "NotImplementedError":
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        func = node.value.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "log":
            return True
    return False


def _in_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _scopes(tree: ast.Module) -> dict[int, str]:
    """id(node) -> qualified name of the function or class it is in ('<module>' at top level)."""
    names: dict[int, str] = {}

    def visit(node: ast.AST, scope: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = scope
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = child.name if scope == "<module>" else f"{scope}.{child.name}"
            names[id(child)] = inner
            visit(child, inner)

    visit(tree, "<module>")
    return names


def _skipped_nodes(tree: ast.Module) -> set[int]:
    """Nodes never mutated: annotations, TYPE_CHECKING blocks, decorators, docstrings and log calls."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        parts: list[ast.AST] = []
        if isinstance(node, ast.If) and _in_type_checking(node):
            parts.append(node)
        if isinstance(node, ast.arg | ast.AnnAssign) and node.annotation is not None:
            parts.append(node.annotation)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            parts.extend(node.decorator_list)
            if node.returns is not None:
                parts.append(node.returns)
        if isinstance(node, ast.stmt) and _skip_statement(node):
            parts.append(node)
        for part in parts:
            skipped.update(id(n) for n in ast.walk(part))
    return skipped


def _changes(node: ast.AST) -> list[tuple[str, int]]:
    """(operator, which) pairs possible at this node; `which` picks the operand of a multi-op compare."""
    out: list[tuple[str, int]] = []
    if isinstance(node, ast.Compare):
        out += [(f"{type(op).__name__}->{COMPARE_SWAPS[type(op)].__name__}", i) for i, op in enumerate(node.ops)]
    elif isinstance(node, ast.BinOp) and type(node.op) in BINOP_SWAPS:
        out.append((f"{type(node.op).__name__}->{BINOP_SWAPS[type(node.op)].__name__}", 0))
    elif isinstance(node, ast.AugAssign) and type(node.op) in BINOP_SWAPS:
        out.append((f"{type(node.op).__name__}=->{BINOP_SWAPS[type(node.op)].__name__}=", 0))
    elif isinstance(node, ast.BoolOp):
        out.append((f"{type(node.op).__name__}->{BOOL_SWAPS[type(node.op)].__name__}", 0))
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        out.append(("drop not", 0))
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        out.append((f"{node.value}->{not node.value}", 0))
    elif isinstance(node, ast.Constant) and type(node.value) in (int, float):
        out.append(("number+1" if node.value != 0 else "0->1", 0))
    if isinstance(node, DELETABLE) or (isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Attribute | ast.Subscript) for t in node.targets)):
        out.append(("delete statement", 0))
    return out


def mutants(source: str) -> list[Mutant]:
    """Every mutant of the file, in source order."""
    tree = ast.parse(source)
    scopes, skipped = _scopes(tree), _skipped_nodes(tree)
    seen: Counter[str] = Counter()
    out = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skipped or not hasattr(node, "lineno"):
            continue
        for operator, which in _changes(node):
            text = " ".join((ast.get_source_segment(source, node) or "").split())[:80]
            base = f"{scopes.get(id(node), '<module>')}: {operator}: {text}"
            seen[base] += 1
            out.append(Mutant(f"{base}#{seen[base]}", node.lineno, (index, which), operator))
    return sorted(out, key=lambda m: (m.line, m.key))


def _apply(node: ast.AST, operator: str, which: int) -> None:
    if isinstance(node, ast.Compare) and "->" in operator:
        node.ops[which] = COMPARE_SWAPS[type(node.ops[which])]()
    elif isinstance(node, ast.BinOp | ast.AugAssign) and operator != "delete statement":
        node.op = BINOP_SWAPS[type(node.op)]()
    elif isinstance(node, ast.BoolOp):
        node.op = BOOL_SWAPS[type(node.op)]()
    elif isinstance(node, ast.Constant) and type(node.value) is bool:
        node.value = not node.value
    elif isinstance(node, ast.Constant):
        node.value = node.value + 1
    else:
        raise ValueError(f"cannot apply {operator} to {ast.dump(node)[:80]}")


def mutated_tree(source: str, mutant: Mutant) -> ast.Module:
    """The parsed file with this one mutant applied."""
    tree = ast.parse(source)
    index, which = mutant.path
    target = next(n for i, n in enumerate(ast.walk(tree)) if i == index)
    if mutant.operator == "drop not":
        _replace(tree, target, target.operand)
    elif mutant.operator == "delete statement":
        _replace(tree, target, ast.copy_location(ast.Pass(), target))
    else:
        _apply(target, mutant.operator, which)
    return ast.fix_missing_locations(tree)


def _replace(tree: ast.AST, old: ast.AST, new: ast.AST) -> None:
    """Put new where old is in its parent (a field or a list of statements)."""
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if value is old:
                setattr(parent, field, copy.copy(new))
                return
            if isinstance(value, list) and any(v is old for v in value):
                value[[i for i, v in enumerate(value) if v is old][0]] = new
                return
    raise ValueError("node not found in its tree")
