"""Commands for the paper's further experiments: arena-style battles from pointwise logs, prompt attributes."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from uniroute.cli.app import app, fail


@app.command("arena-battles")
def arena_battles(
    data: Annotated[Path, typer.Option(help="Pointwise long-format log (file or dataset folder).")],
    out: Annotated[Path, typer.Option(help="Pairwise file to write (.csv, .jsonl or .parquet).")],
    seed: Annotated[int, typer.Option(help="Seed of the random pairs.")] = 0,
):
    """Turn a pointwise log into Chatbot Arena-style battles: per prompt, two random LLMs, the better score wins."""
    from uniroute import evaluation as ev
    from uniroute.evaluation.pairwise import arena_battles_frame

    try:
        battles = arena_battles_frame(ev.long_frame(data), seed)
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    out.parent.mkdir(parents=True, exist_ok=True)
    suffix = out.suffix.lower()
    if suffix == ".parquet":
        battles.to_parquet(out, index=False)
    elif suffix == ".jsonl":
        battles.to_json(out, orient="records", lines=True)
    elif suffix == ".csv":
        battles.to_csv(out, index=False)
    else:
        fail(f"{out}: write .csv, .jsonl or .parquet, not {suffix!r}")
    typer.echo(f"wrote {len(battles):,} battles between {battles[['model_a', 'model_b']].stack().nunique()} LLMs "
               f"to {out}")
