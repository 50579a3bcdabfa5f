"""What the no-champion onboarding tests share: a results file for a model that arrives before any build."""

from __future__ import annotations

from pathlib import Path

from uniroute.operations import waiting_line

EARLY = "early-llm"
# The one line both surfaces print (CLI stdout, the flow's log and run name) before the first build.
EARLY_LINE = waiting_line([EARLY])


def early_results(folder: Path) -> Path:
    """Validation results of EARLY in the long format, three prompts."""
    path = folder / "early.csv"
    path.write_text("prompt_id,prompt,model,score,cost\n"
                    f"e1,What is 2+2?,{EARLY},1,0.5\ne2,Name a colour.,{EARLY},0,0.5\ne3,Say hi.,{EARLY},1,0.5\n")
    return path
