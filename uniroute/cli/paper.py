"""Commands for the paper's further experiments: arena-style battles from pointwise logs, prompt attributes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from uniroute import operations  # a facade importing each operation's module on first use
from uniroute.cli.app import JsonFlag, app, context, fail, one_line_errors, settings_from_env

# The experiments are imported inside the command that runs them (cli/app.py says why).


@app.command("arena-battles")
def arena_battles(
    data: Annotated[Path, typer.Option(help="Pointwise long-format log (file or dataset folder).")],
    out: Annotated[Path, typer.Option(help="Pairwise file to write (.csv, .jsonl or .parquet).")],
    seed: Annotated[int, typer.Option(help="Seed of the random pairs.")] = 0,
    as_json: JsonFlag = False,
):
    """Turn a pointwise log into Chatbot Arena-style battles: per prompt, two random LLMs, the better score wins."""
    from uniroute import experiments as ev
    from uniroute.experiments.pairwise_protocol import arena_battles_frame

    suffix = out.suffix.lower()
    if suffix not in (".parquet", ".jsonl", ".csv"):
        fail(f"{out}: write .csv, .jsonl or .parquet, not {suffix!r}")
    try:
        battles = arena_battles_frame(ev.long_frame(data), seed)
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    with one_line_errors(OSError):  # a folder in the way, no write access, a full disk
        out.parent.mkdir(parents=True, exist_ok=True)
        if suffix == ".parquet":
            battles.to_parquet(out, index=False)
        elif suffix == ".jsonl":
            battles.to_json(out, orient="records", lines=True)
        else:
            battles.to_csv(out, index=False)
    llms = int(battles[["model_a", "model_b"]].stack().nunique())
    typer.echo(json.dumps({"battles": len(battles), "llms": llms, "out": str(out)}) if as_json
               else f"wrote {len(battles):,} battles between {llms} LLMs to {out}")


@app.command()
def annotate(
    data: Annotated[Path, typer.Option(help="A log (pointwise or pairwise) whose prompts to label.")],
    out: Annotated[Path, typer.Option(help="Labels file to write (CSV: prompt_id and one 0/1 column per attribute); "
                                      "`uniroute evaluate --embedder attributes --attribute-labels` reads it.")],
    benchmarks: Annotated[str | None, typer.Option(help="Only the prompts of these benchmarks (comma-separated).")] = (
        None),
    limit: Annotated[int | None, typer.Option(help="Label at most this many prompts (the first by prompt_id).")] = None,
    as_json: JsonFlag = False,
):
    """Label prompts with the seven difficulty attributes by asking the chat endpoint of UNIROUTE_ANNOTATOR_URL
    (OpenAI-compatible) with UNIROUTE_ANNOTATOR_MODEL; answers are cached in the store, so a rerun asks only
    about prompts it has not labelled yet."""
    from uniroute.embed.annotator import AnnotatorConfig
    from uniroute.experiments.transfer_run import only_benchmarks

    settings = settings_from_env()
    if not settings.annotator_url or not settings.annotator_model:
        fail("set UNIROUTE_ANNOTATOR_URL (an OpenAI-compatible API, e.g. http://127.0.0.1:8000/v1) and "
             "UNIROUTE_ANNOTATOR_MODEL")
    config = AnnotatorConfig(settings.annotator_url, settings.annotator_model,
                             settings.annotator_key.get_secret_value() if settings.annotator_key else None,
                             settings.annotator_timeout_seconds)
    try:
        prompts = _prompts_of(data)
        wanted = [b.strip() for b in (benchmarks or "").split(",") if b.strip()]
        prompts = only_benchmarks(prompts, wanted, data).sort_values("prompt_id").head(limit)
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    with one_line_errors():
        labels = operations.annotated(context(settings), prompts, config, str(data))
    with one_line_errors(OSError):  # the answers are cached in the store: a rerun to a writable place asks nothing
        out.parent.mkdir(parents=True, exist_ok=True)
        labels.to_csv(out, index=False)
    typer.echo(json.dumps({"labelled": len(labels), "annotator": config.annotator_id, "out": str(out)}) if as_json
               else f"labelled {len(labels):,} prompts with {config.annotator_id}; wrote {out}")


def _prompts_of(path: Path):
    """The distinct prompts (prompt_id, prompt, benchmark) of a pointwise or pairwise log."""
    from uniroute import experiments as ev
    from uniroute.ingest import IngestError, is_pairwise_file, pairs_frame

    try:
        frame = pairs_frame(path) if not path.is_dir() and is_pairwise_file(path) else ev.long_frame(path)
    except IngestError as exc:
        raise ValueError(str(exc)) from exc
    columns = [c for c in ("prompt_id", "prompt", "benchmark") if c in frame.columns]
    return frame[columns].drop_duplicates("prompt_id").assign(prompt_id=lambda f: f.prompt_id.astype(str))
