"""The router-kind registry: the built-in kinds in the selection's order, one-line errors, and the rule that
nothing outside uniroute/routers/ branches on a kind's name or a router's class."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from uniroute.routers.kinds import (
    RouterKind,
    Tuned,
    default_kind,
    default_kinds,
    kind_names,
    register_kind,
    router_kind,
    unregister_kind,
)

REPO = Path(__file__).resolve().parents[2]
ROUTER_CLASS_CHECK = re.compile(r"isinstance\([^)]*\b(KnnRouter|Router|LearnedMap|Centroids)\b")


def test_builtin_kinds_in_the_order_the_selection_compares_them():
    assert kind_names() == ("kmeans", "kmeans_shrunk", "learnedmap", "knn", "quality_rule", "kmeans_hier")
    assert default_kind() == "kmeans_hier" and default_kinds() == ("kmeans_hier", "kmeans_shrunk")
    assert [router_kind(n).value_label for n in kind_names()] == ["K", "K", "K", "k", "K", "K"]
    assert Tuned("knn", 34).label() == "knn k=34"
    assert Tuned("kmeans_shrunk", 12, 5.0).label() == "kmeans_shrunk K=12 s=5"


def test_an_unknown_kind_is_refused_in_one_line_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown router kind 'zero'; choose from \['kmeans', 'kmeans_shrunk'"):
        router_kind("zero")


def test_a_kind_is_registered_once_and_unregistered_after():
    class Extra(RouterKind):
        name = "extra"

    register_kind(Extra())
    try:
        assert kind_names()[-1] == "extra"
        with pytest.raises(ValueError, match="taken"):
            register_kind(Extra())
    finally:
        unregister_kind("extra")
    assert "extra" not in kind_names()
    with pytest.raises(ValueError, match="default"):
        unregister_kind(default_kind())


def _outside_routers() -> list[Path]:
    library = [p for p in (REPO / "uniroute").rglob("*.py") if "routers" not in p.relative_to(REPO).parts]
    return [*library, *(REPO / "flows").rglob("*.py"), *(REPO / "deployments").rglob("*.py")]


def test_nothing_outside_routers_branches_on_a_kind_name_or_a_router_class():
    names = "|".join(re.escape(n) for n in kind_names())
    compared = re.compile(rf"""(==|!=|\bin\b)\s*\(?\s*["']({names})["']|["']({names})["']\s*(==|!=)""")
    offenders = [f"{path.relative_to(REPO)}:{i}: {line.strip()}"
                 for path in _outside_routers()
                 for i, line in enumerate(path.read_text().splitlines(), start=1)
                 if ROUTER_CLASS_CHECK.search(line) or compared.search(line)]
    assert offenders == []
