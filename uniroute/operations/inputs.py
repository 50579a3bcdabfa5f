"""Every input of an operation decided once, at the boundary: names checked against what the library knows.

Settings parse shapes (a tuple of kind names, an int seed); these check the names against the embedders and the
router kinds, so nothing below re-parses or re-checks them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from uniroute.embed.kinds import EmbedderKind, build_embedder_kind
from uniroute.pipeline.build.tuned_kinds import checked_kinds


@dataclass(frozen=True)
class BuildInputs:
    """What a build runs with: an embedder that can serve builds, a seed, and the kinds it chooses among."""

    embedder: EmbedderKind
    seed: int
    kinds: tuple[str, ...] | None  # None: every kind

    def line(self) -> str:
        """The inputs as the operations log records them."""
        kinds = f" kinds={','.join(self.kinds)}" if self.kinds is not None else ""
        return f"embedder={self.embedder.name} seed={self.seed}{kinds}"


def router_kinds(names: Sequence[str]) -> tuple[str, ...] | None:
    """The router kinds named (None when none is: every kind); KindError for unknown ones.

    The one call to the kinds' list: when kinds become a registry, this line changes and nothing else.
    """
    return checked_kinds(names) if names else None


def build_inputs(embedder: str, seed: int, kinds: Sequence[str]) -> BuildInputs:
    """A build's inputs, checked; EmbedderError or KindError in one line for a bad name."""
    return BuildInputs(build_embedder_kind(embedder), int(seed), router_kinds(kinds))
