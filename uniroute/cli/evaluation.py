"""Commands for offline evaluation: run the paper's protocol, print a saved result."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from uniroute.cli.app import JsonFlag, app, fail, settings_from_env


def _int_list(text: str | None, what: str, allow_all: bool = False) -> list[int]:
    """Comma-separated positive integers (and, when allowed, the word `all`, which is dropped)."""
    if not text:
        return []
    values = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if allow_all and part.lower() == "all":
            continue  # the full validation set is always part of the study
        if not part.isdigit() or int(part) < 1:
            fail(f"{what} must be positive integers separated by commas, got {part!r}")
        values.append(int(part))
    return values


@app.command()
def evaluate(
    data: Annotated[Path, typer.Option(help="Long-format results (Parquet/CSV/JSONL with prompt_id, prompt, "
                                       "model, score, cost) or a dataset folder holding long.parquet.")],
    out: Annotated[Path, typer.Option(help="JSON result file; the deferral-curve PNG is written beside it.")],
    trials: Annotated[int, typer.Option(help="Number of random train/test LLM and prompt splits.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed; trial t uses numpy default_rng((seed, t)).")] = 0,
    embedder: Annotated[str | None, typer.Option(
        help="minilm, minilm-onnx, static or tfidf (default: UNIROUTE_EMBEDDER)."
    )] = None,
    methods: Annotated[str, typer.Option(help="Comma-separated methods to compare: zero, the router kinds knn, "
                                         "kmeans, kmeans_shrunk and learnedmap, auto (the kind chosen on "
                                         "validation), and the clairvoyant oracles mlp and matfac.")] = (
        "zero,knn,kmeans,kmeans_shrunk,learnedmap,auto,mlp,matfac"
    ),
    val_sizes: Annotated[str | None, typer.Option(
        "--val-sizes", help="Validation-size study, e.g. 25,50,100,200,400,all: writes <out>_valsize.json/.png."
    )] = None,
    prompt_part: Annotated[str, typer.Option(help="Embed the full prompt, or its last-block (after the last "
                                             "blank line; for few-shot prompts).")] = "full",
    workers: Annotated[int, typer.Option(help="Dask worker processes (0: run the trials in this process).")] = 2,
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address (default: UNIROUTE_DASK_ADDRESS; "
                                                  "none starts a local cluster).")] = None,
    as_json: JsonFlag = False,
):
    """Compare routers on unseen test LLMs over random trials (DESIGN.md sections 4 and 5)."""
    from uniroute import evaluation as ev

    settings = settings_from_env()
    method_list = tuple(m.strip() for m in methods.split(",") if m.strip())
    sizes = _int_list(val_sizes, "--val-sizes", allow_all=True)
    if trials < 1:
        fail(f"--trials must be >= 1, got {trials}")
    if workers < 0:
        fail(f"--workers must be >= 0, got {workers}")
    try:
        config = ev.EvalConfig(seed=seed, methods=method_list, val_sizes=tuple(sizes))
        eval_data = ev.eval_data_from_frame(ev.long_frame(data))
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    if eval_data.excluded_models:
        typer.echo(f"excluded (no cost, so no place on a cost axis): {', '.join(eval_data.excluded_models)}", err=True)
    name = embedder or settings.embedder
    try:
        texts = ev.prompt_texts(eval_data.prompts, prompt_part)
    except ValueError as exc:
        fail(str(exc))
    X, embedder_id = ev.prompt_embeddings(texts, name, settings.db_path, seed, cache_dir=settings.cache_dir)
    typer.echo(f"{data}: {eval_data.routing.n_prompts} prompts, {len(eval_data.routing.models)} models, "
               f"embedder {embedder_id}; {trials} trials on {workers or 'in-process'} workers", err=True)

    from uniroute.progress import progress_bar

    # A bar with rate and ETA on a terminal; a line every tenth of the trials in a file or a pipe.
    bar = progress_bar(trials, "trials", "trial", logging.getLogger(__name__),
                       enabled=not as_json and sys.stderr.isatty())

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            bar.update(done - bar.n)
        elif not as_json and (done == total or done % max(1, total // 10) == 0):
            typer.echo(f"  {done}/{total} trials", err=True)

    with bar:
        report, study, results = ev.evaluate(
            eval_data, X, trials, config, workers=workers, scheduler_address=scheduler or settings.dask_address,
            progress=progress,
        )
    dataset = data.name if data.is_dir() else data.stem
    report.update(dataset=dataset, embedder_id=embedder_id, prompt_part=prompt_part, data=str(data))
    paths = ev.write_outputs(report, study, results, out, title=f"{dataset}: {trials} trials, {embedder_id}")
    if as_json:
        typer.echo(json.dumps(report))
    else:
        typer.echo(ev.markdown_report(report, study))
        typer.echo("wrote " + ", ".join(str(p) for p in paths))


@app.command()
def report(
    result: Annotated[Path, typer.Argument(help="A JSON result written by `uniroute evaluate --out`; its "
                                           "<name>_valsize.json beside it is included when present.")],
):
    """Print a saved evaluation as Markdown: the method table, the sign tests and the validation-size study."""
    from uniroute import evaluation as ev

    try:
        saved = json.loads(result.read_text())
        study_path = result.with_name(result.stem + "_valsize.json")
        study = json.loads(study_path.read_text()) if study_path.exists() else None
        typer.echo(ev.markdown_report(saved, study))
    except (OSError, ValueError, KeyError) as exc:
        fail(f"{result}: not an evaluation result ({type(exc).__name__}: {exc})")
