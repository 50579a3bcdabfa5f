"""The house rules, checked on the source: stages import downward only, no cycles, Prefect stays in flows/,
MLflow in one room, compute rooms never touch the store, and no module much over 400 lines (docs/architecture.md
draws the same picture)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LIBRARY = REPO / "uniroute"
# Rank of each stage: a module may import its own stage or a lower one, never a higher one. Stages of equal
# rank are peers that must not import each other (ingest and embed both sit right above the store).
STAGE_RANK = {
    "settings": 0,
    "environment": -1,  # the offline switches and plain UNIROUTE_ values, read before pydantic; imports nothing
    "errors": -1,  # the one error base: everything may import it, it imports nothing
    "lazy": -1,  # the packages' import-on-first-use hook (PEP 562): it imports nothing of ours
    "frame_output": 0,
    "faults": 0,
    "progress": 0,
    "store": 1,
    "ingest": 2,
    "embed": 2,
    "synth": 2,
    "routers": 3,
    "selection": 4,
    # The paper's experiment harness is a side branch beside the pipeline: peers, neither imports the other.
    "experiments": 5,
    "pipeline": 5,
    # One function per operation, called by the CLI, the flows and the tests.
    "operations": 6,
    # The request path's edge: it uses the operations and the pipeline; only the CLI starts it.
    "gateway": 6.5,
    "cli": 7,
    "__main__": 8,
}
MLFLOW_ROOM = "uniroute.pipeline.tracking"
# Compute rooms: numpy in, numpy out. The pipeline reads the store and hands them frames (pipeline/pool/psi_data.py).
COMPUTE_ROOMS = ("routers", "selection")
MAX_LINES = 450  # "no module much over 400 lines"
# The wings of pipeline/, in the order they may import each other: a wing imports its own modules and the wings
# before it, never one after it (serving reads the pool's router versions; traffic replays what serving recorded;
# the build tunes, gates on traffic and versions into the pool; tracking mirrors all of it into MLflow; the root's
# reconcile and status look at everything).
PIPELINE_WINGS = ("pool", "serving", "traffic", "build", "tracking")
# A package's root holds its core; families of modules live in its wings.
MAX_ROOT_MODULES = {"pipeline": 6, "routers": 6}
# Module names that may repeat because they mean the same thing in each place: the CLI's command module and the
# operations layer's function module of one operation (two edges over one operation), and a registry of kinds.
SAME_JOB_NAMES = {"kinds.py", "kind.py"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every module name a file imports, at any depth (lazy imports inside functions count too)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _stage(module: str) -> str:
    return module.split(".")[1] if module.count(".") >= 1 else "uniroute"


LIBRARY_FILES = sorted(LIBRARY.rglob("*.py"))


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_stages_import_downward_only(path: Path) -> None:
    module = _module_name(path)
    if module == "uniroute":
        return
    own = _stage(module)
    assert own in STAGE_RANK, f"{module}: stage {own!r} is not in the architecture (docs/architecture.md)"
    for name in _imports(path):
        if not name.startswith("uniroute.") or name == "uniroute":
            continue
        other = _stage(name)
        if other not in STAGE_RANK or other == own:
            continue
        assert STAGE_RANK[other] < STAGE_RANK[own], (
            f"{module} (stage {own}, rank {STAGE_RANK[own]}) imports {name} (stage {other}, rank {STAGE_RANK[other]})"
        )


@pytest.mark.parametrize("path", LIBRARY_FILES, ids=lambda p: str(p.relative_to(REPO)))
def test_library_never_imports_prefect_and_mlflow_stays_in_one_room(path: Path) -> None:
    module = _module_name(path)
    imported = _imports(path)
    assert not any(n == "prefect" or n.startswith("prefect.") for n in imported), f"{module} imports prefect"
    if not module.startswith(MLFLOW_ROOM):
        assert not any(n == "mlflow" or n.startswith("mlflow.") for n in imported), f"{module} imports mlflow"


@pytest.mark.parametrize(
    "path", [p for room in COMPUTE_ROOMS for p in sorted((LIBRARY / room).rglob("*.py"))],
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_compute_rooms_never_touch_the_store(path: Path) -> None:
    imported = _imports(path)  # at any depth, lazy and TYPE_CHECKING imports included
    touching = sorted(n for n in imported if n in ("duckdb", "uniroute.store") or n.startswith(("duckdb.",
                                                                                                 "uniroute.store.")))
    assert not touching, f"{_module_name(path)} imports {touching}: read the store in pipeline/, pass frames in"


@pytest.mark.parametrize("path", sorted((REPO / "flows").rglob("*.py")), ids=lambda p: str(p.relative_to(REPO)))
def test_flows_never_import_the_cli(path: Path) -> None:
    # The flows and the CLI are two edges over the same operations layer: what they share lives in the library.
    imported = _imports(path)
    assert not any(n == "uniroute.cli" or n.startswith("uniroute.cli.") for n in imported), (
        f"{path.relative_to(REPO)} imports the CLI; move what it needs into the library (uniroute/operations/)"
    )


ERROR_SUFFIXES = ("Error", "Exception", "Refused", "Busy", "Locked", "Mismatch", "Timeout", "Store", "NoRouter")


def test_every_library_error_is_a_uniroute_error() -> None:
    # The edges catch UnirouteError once: an error class outside that tree would escape as a traceback.
    bases: dict[str, list[str]] = {}
    for path in LIBRARY_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and node.name.endswith(ERROR_SUFFIXES):
                bases[node.name] = [b.id if isinstance(b, ast.Name) else ast.unparse(b) for b in node.bases]

    def rooted(name: str, seen: frozenset[str] = frozenset()) -> bool:
        return name == "UnirouteError" or any(b not in seen and b in bases and rooted(b, seen | {name})
                                             for b in bases.get(name, []))

    strays = sorted(n for n in bases if n != "UnirouteError" and not rooted(n))
    assert not strays, f"error classes not derived from uniroute.errors.UnirouteError: {strays}"


def _assert_no_import_cycles(files: list[Path]) -> None:
    modules = {_module_name(p): p for p in files}
    graph = {m: {n for n in _imports(p) if n in modules and n != m} for m, p in modules.items()}
    # Package __init__ files re-export their children; an edge into a package's own children is not a cycle.
    for m in graph:
        graph[m] = {n for n in graph[m] if not n.startswith(m + ".") and not m.startswith(n + ".")}
    state: dict[str, int] = {}

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
                raise AssertionError(f"import cycle: {' -> '.join(cycle)}")
            if nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


def test_no_import_cycles_between_library_modules() -> None:
    _assert_no_import_cycles(LIBRARY_FILES)


def test_no_import_cycles_between_benchmark_modules() -> None:
    # benchmarks/ is grouped by what it measures (speed/, scale/, quality/, paper/) around one runner module.
    _assert_no_import_cycles(sorted((REPO / "benchmarks").rglob("*.py")))


def test_no_import_cycles_between_tool_modules() -> None:
    # tools/ (page generators, mutation testing) reads benchmarks/ and the library, never the other way.
    _assert_no_import_cycles(sorted((REPO / "tools").rglob("*.py")))


def test_every_package_says_what_it_owns_and_docs_name_it() -> None:
    architecture = (REPO / "docs" / "architecture.md").read_text()
    for init in sorted(LIBRARY.glob("*/__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        package = init.parent.name
        assert doc and len(doc.split()) >= 20, f"uniroute/{package}/__init__.py needs a docstring saying what it owns"
        assert f"uniroute/{package}/" in architecture, f"docs/architecture.md does not describe uniroute/{package}/"


@pytest.mark.parametrize(
    "path",
    sorted(p for folder in ("uniroute", "flows", "deployments", "benchmarks", "tools")
           for p in (REPO / folder).rglob("*.py")),
    ids=lambda p: str(p.relative_to(REPO)),
)
def test_rooms_stay_small(path: Path) -> None:
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(REPO)} has {lines} lines: split it by responsibility"


def _pipeline_wing(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) >= 3 and parts[:2] == ["uniroute", "pipeline"]:
        return parts[2] if parts[2] in PIPELINE_WINGS else "root"
    return None


@pytest.mark.parametrize("path", sorted((LIBRARY / "pipeline").rglob("*.py")), ids=lambda p: str(p.relative_to(REPO)))
def test_pipeline_wings_import_in_order(path: Path) -> None:
    own = _pipeline_wing(_module_name(path))
    if own is None or own == "root":
        return
    for name in _imports(path):
        other = _pipeline_wing(name)
        if other is None or other == own:
            continue
        assert other != "root" and PIPELINE_WINGS.index(other) < PIPELINE_WINGS.index(own), (
            f"{_module_name(path)} (wing {own}) imports {name} (wing {other}): wings import only those before them, "
            f"in the order {' < '.join(PIPELINE_WINGS)} < the root"
        )


@pytest.mark.parametrize("package", sorted(MAX_ROOT_MODULES))
def test_package_roots_hold_their_core_and_wings_hold_families(package: str) -> None:
    root = LIBRARY / package
    modules = sorted(p.name for p in root.glob("*.py") if p.name != "__init__.py")
    assert len(modules) <= MAX_ROOT_MODULES[package], (
        f"uniroute/{package}/ holds {len(modules)} modules besides its wings ({', '.join(modules)}): "
        "move a family into a wing"
    )


def test_one_meaning_per_module_name() -> None:
    by_name: dict[str, list[Path]] = {}
    for path in LIBRARY_FILES:
        if path.name not in ("__init__.py", "__main__.py"):
            by_name.setdefault(path.name, []).append(path)
    for name, paths in sorted(by_name.items()):
        if len(paths) < 2 or name in SAME_JOB_NAMES:
            continue
        packages = sorted(str(p.parent.relative_to(LIBRARY)) for p in paths)
        # `uniroute <command>` (cli/) and the operation it calls (operations/) share their wing's word
        assert packages == ["cli", "operations"], (
            f"{name} names modules of different jobs in {', '.join(packages)}: give each a name that says its job"
        )
