"""What a build returns: the router it made, how it compares, and the candidates it weighed."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from uniroute.routers.kinds import kind_names, router_kind

# A cluster router tuned to this few clusters sends most prompts to the same model at a setting: a newcomer reads
# that as "routing does nothing". It happens when the validation set is small (make run: K = 2 on 298 prompts).
TINY_K = 2


def tiny_table_note(kind: str | None, k: int | None, n_val: int | None = None) -> str | None:
    """One sentence when a cluster router's tuned K is tiny (more validation answers would help), else None."""
    if kind not in kind_names() or k is None or router_kind(kind).value_label != "K" or k > TINY_K:
        return None
    on = f" on {n_val} validation prompts" if n_val is not None else ""
    return (f"K = {k} was tuned{on}: too few validation answers to tell more topics apart, so most prompts get the "
            "same model; more validation answers would help (`uniroute onboarding-set` names which prompts to ask)")


@dataclass(frozen=True)
class BuildResult:
    """What a build produced and how it compares."""

    router_id: str
    kind: str  # the router kind the build chose (selection) and stored as its router
    k: int  # its K (clusters) or k (neighbours)
    val_area: float | None
    promoted: bool
    reason: str
    metrics: dict[str, dict[str, float]]
    models: tuple[str, ...]
    excluded_models: tuple[str, ...]
    roles: dict[str, list[str]]  # which models tuned the build (training) and which were scored on test prompts
    n_prompts: dict[str, int]
    candidates: tuple[dict, ...] = ()  # one per kind compared: router_candidates' columns (selection.table())
    selection: str = ""  # the selection's one line
    notes: tuple[str, ...] = ()
    seconds: dict[str, float] = field(default_factory=dict)
    shadow: dict | None = None  # the shadow gate on recent traffic (shadow_gate.ShadowGate.as_dict); None: no champion

    def as_dict(self) -> dict:
        return {**self.__dict__, "models": list(self.models), "excluded_models": list(self.excluded_models),
                "candidates": list(self.candidates), "notes": list(self.notes), "value_label": self.value_label,
                "served": self.served}

    def line(self) -> str:
        area = {m: round(v["area"], 4) for m, v in self.metrics.items()}
        state = "champion" if self.promoted else "challenger"
        scored = f"test Area {area}" if area else "no held-out evaluation"
        notes = "".join(f"; {note}" for note in self.notes)
        return f"built {self.router_id} ({self.served}, {len(self.models)} models) as {state}: {scored}{notes}"

    @property
    def value_label(self) -> str:
        """What the served kind's value counts: "K" (clusters) or "k" (neighbours)."""
        return router_kind(self.kind).value_label

    @property
    def served(self) -> str:
        """The served kind and its K (clusters) or k (neighbours), e.g. "kmeans K=6", "knn k=34"."""
        return f"{self.kind} {self.value_label}={self.k}"

    def candidates_table(self) -> pd.DataFrame:
        """The candidates compared, best validation Area first, as a printable frame."""
        frame = pd.DataFrame(list(self.candidates))
        return frame.sort_values("val_area", ascending=False, na_position="last") if len(frame) else frame
