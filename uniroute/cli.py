"""The `uniroute` command line: a thin edge that builds Settings and calls the library."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Annotated

import typer

from uniroute.settings import Settings, apply_offline_environment

app = typer.Typer(
    help=(
        "Route each prompt to the right LLM in a pool that keeps changing (UniRoute). "
        "All state lives under $UNIROUTE_HOME (default ./.uniroute)."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
models_app = typer.Typer(help="Inspect and edit the model registry.", no_args_is_help=True)
app.add_typer(models_app, name="models")

JsonFlag = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]


def _settings() -> Settings:
    settings = Settings()
    apply_offline_environment(settings)
    return settings


def _fail(message: str) -> None:
    """One line on stderr, non-zero exit."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code=1)


@app.callback()
def _main(verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log progress details.")] = False):
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if not verbose:  # MLflow and its migrations log routine INFO lines that would drown the one-line results
        for noisy in ("mlflow", "alembic"):
            logging.getLogger(noisy).setLevel(logging.WARNING)


def _print_frame(frame, as_json: bool, as_csv: bool = False) -> None:
    if as_json:
        typer.echo(frame.to_json(orient="records", date_format="iso"))
    elif as_csv:
        typer.echo(frame.to_csv(index=False), nl=False)
    else:
        import pandas as pd

        with pd.option_context("display.max_rows", 200, "display.max_columns", 50, "display.width", 200):
            typer.echo(frame.to_string(index=False) if len(frame) else "(no rows)")


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Benchmark log files (long CSV/JSONL/Parquet, "
                                                "RouterBench wide CSV, RouterDC JSON); detected by content.")],
    split: Annotated[str | None, typer.Option(help="Mark every prompt of these files as train, val or test.")] = None,
    as_json: JsonFlag = False,
):
    """Validate benchmark logs and load them into the store (one transaction per file)."""
    from uniroute.ingest import IngestError, ingest_file

    settings = _settings()
    if split is not None and split not in ("train", "val", "test"):
        _fail(f"--split must be train, val or test, not {split!r}")
    summaries = []
    for path in paths:
        try:
            summary = ingest_file(settings.db_path, path, split=split, progress=not as_json)
        except (IngestError, FileNotFoundError) as exc:
            _fail(str(exc))
        summaries.append(summary)
        if not as_json:
            typer.echo(summary.line())
    if as_json:
        typer.echo(json.dumps([s.as_dict() for s in summaries]))


@app.command()
def synth(
    out: Annotated[Path, typer.Option(help="Folder to write the synthetic logs into.")],
    prompts: Annotated[int, typer.Option(help="Number of prompts.")] = 5000,
    models: Annotated[int, typer.Option(help="Number of LLMs.")] = 12,
    topics: Annotated[int, typer.Option(help="Number of latent topics (at most 16).")] = 8,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same bytes.")] = 0,
    fmt: Annotated[str, typer.Option("--format", help="Output format: parquet, csv or jsonl.")] = "parquet",
    split: Annotated[bool, typer.Option("--split/--no-split",
                                        help="Add a split column (60/10/30 train/val/test per prompt).")] = False,
    missing_rate: Annotated[float, typer.Option(help="Fraction of (prompt, model) results left out.")] = 0.0,
    as_json: JsonFlag = False,
):
    """Write synthetic benchmark logs (long format) with latent topics, per-model skills and skill-priced costs."""
    from uniroute.synth import write_synthetic_logs

    try:
        summary = write_synthetic_logs(out, n_prompts=prompts, n_models=models, n_topics=topics, seed=seed,
                                       format=fmt, with_split=split, missing_rate=missing_rate)
    except (ValueError, OSError) as exc:
        _fail(str(exc))
    typer.echo(json.dumps(summary.as_dict()) if as_json else summary.line())


@app.command()
def sql(
    statement: Annotated[str, typer.Argument(help="A SELECT over the store's tables and views.")],
    as_json: JsonFlag = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="Print CSV instead of a table.")] = False,
):
    """Run a read-only SQL query on the store; statements that would write are refused."""
    from uniroute.store import StoreError, read_only_query

    settings = _settings()
    try:
        frame = read_only_query(settings.db_path, statement)
    except StoreError as exc:
        _fail(str(exc))
    _print_frame(frame, as_json, as_csv)


@models_app.command("list")
def models_list(as_json: JsonFlag = False):
    """List the models with their status, default cost and result counts."""
    from uniroute.store import StoreError, read_only_query

    try:
        frame = read_only_query(_settings().db_path, "select * from models order by model")
    except StoreError as exc:
        _fail(str(exc))
    _print_frame(frame, as_json)


@models_app.command("set-cost")
def models_set_cost(
    model: Annotated[str, typer.Argument(help="Model name as it appears in the logs.")],
    cost: Annotated[float, typer.Argument(help="Cost per query (any unit, the same for every model).")],
):
    """Set a model's default cost, used where its result rows carry no cost."""
    from uniroute.ingest import IngestError, set_default_cost

    try:
        set_default_cost(_settings().db_path, model, cost)
    except IngestError as exc:
        _fail(str(exc))
    typer.echo(f"{model}: default cost {cost}")


def _int_list(text: str | None, what: str, allow_all: bool = False) -> list[int]:
    """Comma-separated positive integers (and, when allowed, the word `all`, which is dropped)."""
    if not text:
        return []
    values = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        if allow_all and part.lower() == "all":
            continue  # the full validation set is always part of the study
        if not part.isdigit() or int(part) < 1:
            _fail(f"{what} must be positive integers separated by commas, got {part!r}")
        values.append(int(part))
    return values


@app.command()
def evaluate(
    data: Annotated[Path, typer.Option(help="Long-format results (Parquet/CSV/JSONL with prompt_id, prompt, "
                                       "model, score, cost) or a dataset folder holding long.parquet.")],
    out: Annotated[Path, typer.Option(help="JSON result file; the deferral-curve PNG is written beside it.")],
    trials: Annotated[int, typer.Option(help="Number of random train/test LLM and prompt splits.")] = 100,
    seed: Annotated[int, typer.Option(help="Seed; trial t uses numpy default_rng((seed, t)).")] = 0,
    embedder: Annotated[str | None, typer.Option(help="minilm or tfidf (default: UNIROUTE_EMBEDDER).")] = None,
    methods: Annotated[str, typer.Option(help="Comma-separated methods to compare.")] = (
        "zero,knn,kmeans,learnedmap,mlp,matfac"
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
    from uniroute import evaluate as ev

    settings = _settings()
    method_list = tuple(m.strip() for m in methods.split(",") if m.strip())
    sizes = _int_list(val_sizes, "--val-sizes", allow_all=True)
    if trials < 1:
        _fail(f"--trials must be >= 1, got {trials}")
    if workers < 0:
        _fail(f"--workers must be >= 0, got {workers}")
    try:
        config = ev.EvalConfig(seed=seed, methods=method_list, val_sizes=tuple(sizes))
        eval_data = ev.eval_data_from_frame(ev.long_frame(data))
    except (ValueError, FileNotFoundError) as exc:
        _fail(str(exc))
    if eval_data.excluded_models:
        typer.echo(f"excluded (no cost, so no place on a cost axis): {', '.join(eval_data.excluded_models)}", err=True)
    name = embedder or settings.embedder
    try:
        texts = ev.prompt_texts(eval_data.prompts, prompt_part)
    except ValueError as exc:
        _fail(str(exc))
    X, embedder_id = ev.prompt_embeddings(texts, name, settings.db_path, seed)
    typer.echo(f"{data}: {eval_data.routing.n_prompts} prompts, {len(eval_data.routing.models)} models, "
               f"embedder {embedder_id}; {trials} trials on {workers or 'in-process'} workers", err=True)

    def progress(done: int, total: int) -> None:
        if not as_json and (done == total or done % max(1, total // 10) == 0):
            typer.echo(f"  {done}/{total} trials", err=True)

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
    from uniroute import evaluate as ev

    try:
        saved = json.loads(result.read_text())
        study_path = result.with_name(result.stem + "_valsize.json")
        study = json.loads(study_path.read_text()) if study_path.exists() else None
        typer.echo(ev.markdown_report(saved, study))
    except (OSError, ValueError, KeyError) as exc:
        _fail(f"{result}: not an evaluation result ({type(exc).__name__}: {exc})")


@app.command("build")
def build_command(
    embedder: Annotated[str | None, typer.Option(help="minilm (default) or tfidf.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for K-means and the LearnedMap.")] = None,
    as_json: JsonFlag = False,
):
    """The nightly job on what is in the store: choose K, fit, compute Psi, evaluate, log, version."""
    from uniroute.build import BuildError, run_build

    settings = _settings()
    try:
        result = run_build(settings.db_path, embedder or settings.embedder, settings.seed if seed is None else seed,
                           settings.mlflow_uri, settings.mlflow_artifacts)
    except BuildError as exc:
        _fail(str(exc))
    typer.echo(json.dumps(result.as_dict(), default=str) if as_json else result.line())


@app.command()
def onboard(
    results: Annotated[list[Path], typer.Option("--results", help="Validation results of the new model(s), any "
                                                "ingest format; prompts without a split count as validation.")],
    as_json: JsonFlag = False,
):
    """Add or refresh models from their validation results, on the champion's frozen clusters."""
    from uniroute.ingest import IngestError, ingest_file
    from uniroute.onboard import OnboardError, onboard_models

    settings = _settings()
    models: list[str] = []
    try:
        for path in results:
            summary = ingest_file(settings.db_path, path, split="val", progress=not as_json)
            models += [m for m in summary.landed_models if m not in models]
        if not models:
            _fail(f"no new validation results in {', '.join(map(str, results))}: nothing to onboard")
        result = onboard_models(settings.db_path, models, settings.mlflow_uri, settings.mlflow_artifacts)
    except (IngestError, OnboardError, LookupError, FileNotFoundError) as exc:
        _fail(str(exc))
    typer.echo(json.dumps(result.as_dict()) if as_json else result.line())


@app.command()
def retire(model: Annotated[str, typer.Argument(help="Model to take out of the pool.")]):
    """Remove a model from the pool (routing and publishing skip it; its results stay)."""
    from uniroute.onboard import OnboardError, retire_model

    try:
        retire_model(_settings().db_path, model)
    except OnboardError as exc:
        _fail(str(exc))
    typer.echo(f"retired {model}")


@app.command("publish")
def publish_command(
    force: Annotated[bool, typer.Option(help="Publish even if nothing changed.")] = False,
    as_json: JsonFlag = False,
):
    """Write the champion's routing tables for the active pool (atomic, versioned)."""
    from uniroute.publish import PublishError, publish_champion

    settings = _settings()
    try:
        result = publish_champion(settings.db_path, settings.published_dir, settings.mlflow_uri,
                                  settings.mlflow_artifacts, force=force)
    except (PublishError, LookupError) as exc:
        _fail(str(exc))
    if as_json:
        typer.echo(json.dumps(result.as_dict()))
    else:
        typer.echo(f"published {result.version} -> {result.path}" if result.published else result.reason)


@app.command()
def route(
    texts: Annotated[list[str], typer.Argument(help="Prompts to route.")],
    lam: Annotated[float | None, typer.Option("--lambda", help="Cost weight: argmin loss + lambda * cost.")] = None,
    budget: Annotated[
        float | None, typer.Option(help="Target mean cost as a fraction of the priciest model's.")
    ] = None,
    pool: Annotated[
        str | None, typer.Option(help="Comma-separated models to choose among (default: the active pool).")
    ] = None,
    log_decisions: Annotated[
        bool, typer.Option("--log", help="Append the decisions to the routing_log table.")
    ] = False,
    as_json: JsonFlag = False,
):
    """Route prompts with the champion router."""
    from uniroute.decisions import RoutingError, route_texts

    if lam is not None and budget is not None:
        _fail("give --lambda or --budget, not both")
    settings = _settings()
    try:
        decisions = route_texts(settings.db_path, texts, lam=lam, budget=budget,
                                pool=[p.strip() for p in pool.split(",")] if pool else None, log=log_decisions)
    except (RoutingError, LookupError, ValueError) as exc:
        _fail(str(exc))
    _print_frame(decisions.drop(columns=["text_hash"]), as_json)
