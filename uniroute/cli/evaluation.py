"""Commands for offline evaluation: run the paper's protocol, print a saved result."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from uniroute import operations  # a facade importing each operation's module on first use
from uniroute.cli.app import JsonFlag, app, context, fail, one_line_errors, settings_from_env

# The evaluation harness (scipy, matplotlib, the ingest readers) is imported inside the command that runs it:
# every other command, and --help, loads this module (cli/app.py says why).

if TYPE_CHECKING:
    from uniroute.routers.router import Router


def _check_out(out: Path) -> None:
    """Fail before any trial runs when the results could not be written to `out` (a folder, no write access)."""
    if out.is_dir():
        fail(f"--out {out}: a folder; name the JSON file to write, e.g. {out / 'results.json'}")
    parent = out.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
        fail(f"--out {out}: cannot write there ({parent} is not a writable folder)")


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
        help="minilm, minilm-onnx, static, tfidf or attributes (default: UNIROUTE_BUILD_EMBEDDER)."
    )] = None,
    methods: Annotated[str, typer.Option(help="Comma-separated methods to compare: zero, the router kinds knn, "
                                         "kmeans, kmeans_shrunk and learnedmap, auto (the kind chosen on "
                                         "validation), the clairvoyant oracles mlp and matfac, and pairwise "
                                         "(K-means from arena-style battles drawn from the labels; not run "
                                         "unless named).")] = (
        "zero,knn,kmeans,kmeans_shrunk,learnedmap,auto,mlp,matfac"
    ),
    val_sizes: Annotated[str | None, typer.Option(
        "--val-sizes", help="Validation-size study, e.g. 25,50,100,200,400,all: writes <out>_valsize.json/.png."
    )] = None,
    val_selection: Annotated[str, typer.Option(
        "--val-selection", help="With --val-sizes: which N validation prompts a test LLM answers, compared with "
        "random on the same trials: random, stratified, allocated, anchored, best (what `uniroute "
        "onboarding-set` sends by default), comma-separated.")] = "random",
    battles_per_prompt: Annotated[int, typer.Option(
        "--battles-per-prompt", help="pairwise: disjoint arena-style battles drawn per prompt between random LLMs "
        "with a label there (1: one battle, as in an arena; M/2: every LLM in one battle).")] = 1,
    prompt_part: Annotated[str, typer.Option(help="Embed the full prompt, or its last-block (after the last "
                                             "blank line; for few-shot prompts).")] = "full",
    workers: Annotated[int, typer.Option(help="Dask worker processes (0: run the trials in this process).")] = 2,
    scheduler: Annotated[str | None, typer.Option(help="Dask scheduler address (default: UNIROUTE_DASK_ADDRESS; "
                                                  "none starts a local cluster).")] = None,
    test_data: Annotated[Path | None, typer.Option(
        "--test-data", help="Transfer: train on --data (pointwise or pairwise) and test on this log's prompts "
        "(pointwise) over the LLMs both share.")] = None,
    train_benchmarks: Annotated[str | None, typer.Option(help="Transfer: only these benchmarks of --data.")] = None,
    test_benchmarks: Annotated[str | None, typer.Option(help="Transfer: only these benchmarks of --test-data.")] = None,
    test_fraction: Annotated[float, typer.Option(help="Transfer: share of the test log's prompts per trial.")] = 0.5,
    attribute_labels: Annotated[Path | None, typer.Option(
        help="--embedder attributes: prompt_id and one 0/1 column per attribute (see `uniroute annotate`).")] = None,
    attribute_base: Annotated[str, typer.Option(help="--embedder attributes: the frozen embedder the heads read.")] = (
        "static"),
    drop_costs: Annotated[bool, typer.Option(
        "--drop-costs", help="Ignore the log's costs: the quality-only comparison (every model at one cost), to ask "
        "whether routing beats the best single LLM.")] = False,
    as_json: JsonFlag = False,
):
    """Compare routers on unseen test LLMs over random trials (DESIGN.md sections 4 and 5).

    Without costs in the data, the comparison is quality-only: mean test score at lambda = 0 next to the best
    single LLM and the oracle. With --test-data, the transfer protocol (train on one log, test on another)."""
    from uniroute import experiments as ev
    from uniroute.embed.kinds import embedder_kind
    from uniroute.ingest import is_pairwise_file
    from uniroute.progress import progress_bar

    settings = settings_from_env()
    method_list = tuple(m.strip() for m in methods.split(",") if m.strip())
    sizes = _int_list(val_sizes, "--val-sizes", allow_all=True)
    if trials < 1:
        fail(f"--trials must be >= 1, got {trials}")
    _check_out(out)
    if workers < 0:
        fail(f"--workers must be >= 0, got {workers}")
    if battles_per_prompt < 1:
        fail(f"--battles-per-prompt must be >= 1, got {battles_per_prompt}")
    if battles_per_prompt != 1 and ("pairwise" not in method_list or test_data is not None):
        fail("--battles-per-prompt draws the battles of the pairwise method from a pointwise log: add pairwise to "
             "--methods (and no --test-data)")
    name = embedder or settings.build_embedder_name
    with one_line_errors():
        kind = embedder_kind(name)
    attributes = _AttributeOptions(attribute_labels, attribute_base) if kind.needs_labels else None
    if attributes is not None and attribute_labels is None:
        fail("--embedder attributes needs --attribute-labels FILE (prompt_id and one 0/1 column per attribute)")
    if drop_costs and test_data is not None:
        fail("--drop-costs applies to one log; a transfer is quality-only when its test log has no costs")
    if test_data is not None:
        _transfer(settings, data, test_data, out, trials, seed, name, attributes, method_list, prompt_part, workers,
                  scheduler, train_benchmarks, test_benchmarks, test_fraction, as_json)
        return
    if train_benchmarks or test_benchmarks:
        fail("--train-benchmarks and --test-benchmarks select the logs of a transfer: give --test-data too")

    if not data.is_dir() and is_pairwise_file(data):
        fail(f"{data}: pairwise preferences; routers are scored on pointwise labels: give them with --test-data "
             "(transfer), or evaluate `--methods ...,pairwise` on a pointwise log")
    quality_only = False
    try:
        config = ev.EvalConfig(seed=seed, methods=method_list, val_sizes=tuple(sizes),
                               val_selections=tuple(s.strip() for s in val_selection.split(",") if s.strip()),
                               battles_per_prompt=battles_per_prompt)
    except ValueError as exc:
        fail(str(exc))
    try:
        frame = ev.long_frame(data)
        quality_only = drop_costs or not ev.has_costs(frame)
        eval_data = ev.unit_cost_data(frame) if quality_only else ev.eval_data_from_frame(frame)
    except (ValueError, FileNotFoundError) as exc:  # pandas' and pyarrow's messages do not name the file
        fail(str(exc) if str(data) in str(exc) else f"{data}: {exc}")
    if eval_data.excluded_models:
        typer.echo(f"excluded (no cost, so no place on a cost axis): {', '.join(eval_data.excluded_models)}", err=True)
    try:
        texts = ev.prompt_texts(eval_data.prompts, prompt_part)
        X, embedder_id, about = _embeddings(settings, texts, eval_data.prompt_ids, name, attributes, seed)
    except ValueError as exc:
        fail(str(exc))
    typer.echo(f"{data}: {eval_data.routing.n_prompts} prompts, {len(eval_data.routing.models)} models, "
               f"embedder {embedder_id}; {trials} trials on {workers or 'in-process'} workers", err=True)

    # A bar with rate and ETA on a terminal; a line every tenth of the trials in a file or a pipe.
    bar = progress_bar(trials, "trials", "trial", logging.getLogger(__name__),
                       enabled=not as_json and sys.stderr.isatty())

    def progress(done: int, total: int) -> None:
        if sys.stderr.isatty():
            bar.update(done - bar.n)
        elif not as_json and (done == total or done % max(1, total // 10) == 0):
            typer.echo(f"  {done}/{total} trials", err=True)

    try:
        with bar:
            report, study, results = ev.evaluate(
                eval_data, X, trials, config, workers=workers, scheduler_address=scheduler or settings.dask_address,
                progress=progress,
            )
    except ValueError as exc:  # data the protocol cannot score (e.g. a model with results on a few prompts)
        fail(str(exc))
    dataset = data.name if data.is_dir() else data.stem
    report.update(dataset=dataset, embedder_id=embedder_id, prompt_part=prompt_part, data=str(data), **about)
    title = f"{dataset}: {trials} trials, {embedder_id}"
    if quality_only:
        report = ev.quality_report(report, results, ev.protocol_oracles(eval_data.routing, config, results))
    with one_line_errors(OSError):  # a full disk, or a place _check_out could not foresee
        paths = (ev.write_transfer_outputs(report, out, title) if quality_only
                 else ev.write_outputs(report, study, results, out, title=title))
    _print_report(report, study, paths, as_json)


def _print_report(report: dict, study: dict | None, paths: list[Path], as_json: bool) -> None:
    from uniroute import experiments as ev

    if as_json:
        typer.echo(json.dumps(report))
        return
    typer.echo(ev.quality_markdown(report) if report.get("quality_only") else ev.markdown_report(report, study))
    typer.echo("wrote " + ", ".join(str(p) for p in paths))


class _AttributeOptions:
    """Where the attribute labels are and which frozen embedder the heads read."""

    def __init__(self, labels: Path | None, base: str) -> None:
        self.labels, self.base = labels, base


def _embeddings(settings, texts: list[str], prompt_ids, name: str, attributes: _AttributeOptions | None, seed: int,
                fit_ids=None) -> tuple:
    """(X, embedder id, report fields): the named embedder through the cache, or attribute heads on its base."""
    if attributes is None:
        X, embedder_id = operations.prompt_embeddings(context(settings), texts, name, seed)
        return X, embedder_id, {}
    from uniroute.embed.attributes import read_attribute_labels

    labels = read_attribute_labels(attributes.labels)  # type: ignore[arg-type]  # given with attributes (checked)
    X, embedder_id, info = operations.attribute_embeddings(context(settings), texts, list(prompt_ids), labels,
                                                           attributes.base, seed, fit_ids)
    return X, embedder_id, {"attribute_heads": {**info, "labels": str(attributes.labels)}}


def _transfer(settings, data: Path, test_data: Path, out: Path, trials: int, seed: int, embedder: str,
              attributes: _AttributeOptions | None, methods: tuple[str, ...], prompt_part: str, workers: int,
              scheduler: str | None,
              train_benchmarks: str | None, test_benchmarks: str | None, test_fraction: float,
              as_json: bool) -> None:
    """`uniroute evaluate --test-data`: the transfer protocol (evaluation.transfer)."""
    from uniroute import experiments as ev
    from uniroute.ingest import IngestError

    def names(text: str | None) -> list[str]:
        return [part.strip() for part in (text or "").split(",") if part.strip()]

    try:
        train_log, train_costs = ev.read_log(data, names(train_benchmarks))
        test_log, test_costs = ev.read_log(test_data, names(test_benchmarks), allow_pairwise=False)
        # allow_pairwise=False: the test log is pointwise
        transfer = ev.transfer_data(train_log, test_log, train_costs, test_costs)  # type: ignore[arg-type]
        if transfer.pairwise:
            methods = tuple(m for m in methods if m in ev.PAIRWISE_TRANSFER_METHODS)
        config = ev.TransferConfig(seed=seed, methods=tuple(m for m in methods if m in ev.TRANSFER_METHODS),
                                   test_fraction=test_fraction)
        texts = ev.prompt_texts(transfer.prompts, prompt_part)
        X, embedder_id, about = _embeddings(settings, texts, transfer.prompt_ids, embedder, attributes, seed,
                                            fit_ids=transfer.prompt_ids[: transfer.n_train_prompts])
    except (ValueError, FileNotFoundError, IngestError) as exc:
        fail(str(exc))
    typer.echo(f"transfer {data} -> {test_data}: {len(transfer.routing.models)} shared LLMs, "
               f"{transfer.n_train_prompts} training and {transfer.n_prompts - transfer.n_train_prompts} test "
               f"prompts, {transfer.train_evidence_kind} evidence; c(m) from the {transfer.costs_from}", err=True)
    report, _ = ev.evaluate_transfer(transfer, X, trials, config, workers, scheduler or settings.dask_address)
    report.update(data=str(data), test_data=str(test_data), train_benchmarks=names(train_benchmarks),
                  test_benchmarks=names(test_benchmarks), embedder_id=embedder_id, prompt_part=prompt_part,
                  dataset=f"{Path(data).stem} -> {Path(test_data).stem}", **about)
    title = f"transfer {report['dataset']}: {trials} trials, {embedder_id}"
    with one_line_errors(OSError):
        paths = ev.write_transfer_outputs(report, out, title)
    _print_report(report, None, paths, as_json)


@app.command()
def report(
    result: Annotated[Path | None, typer.Argument(help="A JSON result written by `uniroute evaluate --out`; its "
                                                  "<name>_valsize.json beside it is included when present.")] = None,
    similarity: Annotated[Path | None, typer.Option(
        help="Write the LLM-similarity map (cosine of Psi rows, hierarchically ordered) to this PNG (+ JSON): of "
        "the champion router in the store, or of --data.")] = None,
    data: Annotated[Path | None, typer.Option(help="Similarity map of this log's LLMs instead of the champion's: "
                                              "Psi on K-means clusters of all its prompts.")] = None,
    k: Annotated[int, typer.Option(help="Clusters K for the similarity map of --data.")] = 20,
    embedder: Annotated[str | None, typer.Option(help="Embedder for --data (default: UNIROUTE_EMBEDDER).")] = None,
    prompt_part: Annotated[str, typer.Option(help="full or last-block (for --data).")] = "full",
    seed: Annotated[int, typer.Option(help="K-means seed (for --data).")] = 0,
    budgets: Annotated[Path | None, typer.Option(
        help="Print what each budget of the current publication (or --publication) buys: expected score, cost and "
        "each model's traffic share; and draw it to this PNG.")] = None,
    publication: Annotated[str | None, typer.Option(help="The publication --budgets reports on (default: the "
                                                     "current one).")] = None,
    as_json: JsonFlag = False,
):
    """Print a saved evaluation as Markdown (method table, sign tests, validation-size study), and/or write the
    LLM-similarity map, flagging near-duplicate LLMs, and/or what each published budget buys.
    --json: {"markdown": ..., "similarity": {...}, "budgets": {...}}."""
    from uniroute import experiments as ev

    if result is None and similarity is None and budgets is None:
        fail("give a saved evaluation to print, --similarity PNG to draw the LLM-similarity map, or --budgets PNG "
             "to draw what each budget of the current publication buys")
    if result is not None:
        try:
            saved = json.loads(result.read_text())
            study_path = result.with_name(result.stem + "_valsize.json")
            study = json.loads(study_path.read_text()) if study_path.exists() else None
            markdown = ev.quality_markdown(saved) if saved.get("quality_only") else ev.markdown_report(saved, study)
        except (OSError, ValueError, KeyError) as exc:
            fail(f"{result}: not an evaluation result ({type(exc).__name__}: {exc})")
        if not as_json:
            typer.echo(markdown)
    drawn = None
    if similarity is not None:
        if similarity.suffix.lower() != ".png" or similarity.is_dir():
            fail(f"--similarity {similarity}: name the .png file to draw, e.g. {similarity.with_suffix('.png')}")
        drawn = _similarity_map(similarity, data, k, embedder, prompt_part, seed, quiet=as_json)
    bought = None
    if budgets is not None:
        if budgets.suffix.lower() != ".png" or budgets.is_dir():
            fail(f"--budgets {budgets}: name the .png file to draw, e.g. {budgets.with_suffix('.png')}")
        bought = _budget_report(budgets, publication, quiet=as_json)
    if as_json:
        typer.echo(json.dumps({"markdown": markdown if result is not None else None, "similarity": drawn,
                               "budgets": bought}))


def _budget_report(png: Path, version: str | None, quiet: bool = False) -> dict:
    """`uniroute report --budgets`: print the publication's budget table, draw its plot; what it wrote."""
    from uniroute import store
    from uniroute.pipeline.serving.budget_report import load_budget_report, write_budget_plot

    settings = settings_from_env()
    if not settings.db_path.exists():
        fail(f"no store at {settings.db_path}: ingest, build and publish first")
    with one_line_errors(), store.opened(settings.db_path, read_only=True) as con:
        report = load_budget_report(con, version)
    with one_line_errors(OSError):
        write_budget_plot(report, png)
    if not quiet:
        typer.echo(report.markdown())
        typer.echo(f"wrote {png}")
    return {"version": report.version, "router_id": report.router_id, "file": str(png),
            "rows": json.loads(report.table().to_json(orient="records"))}


def _similarity_map(png: Path, data: Path | None, k: int, embedder: str | None, prompt_part: str, seed: int,
                    quiet: bool = False) -> dict:
    """`uniroute report --similarity`: the map of a log's LLMs, or of the champion router's; what it wrote."""
    from uniroute import experiments as ev
    from uniroute.experiments.similarity_map import log_psi, near_duplicate_lines, write_similarity_outputs
    from uniroute.routers.cluster.similarity import model_similarity

    settings = settings_from_env()
    try:
        if data is not None:
            log = ev.unit_cost_data(ev.long_frame(data))  # costs play no part in Psi: every LLM is kept
            X, embedder_id = operations.prompt_embeddings(context(settings), ev.prompt_texts(log.prompts, prompt_part),
                                                          embedder or settings.embedder, seed)
            psi, source = log_psi(log, X, k, seed), f"{data.name if data.is_dir() else data.stem}, K = {k}"
            about = {"data": str(data), "k": k, "embedder_id": embedder_id, "seed": seed}
        else:
            with one_line_errors():
                psi, router_id = _champion_psi(settings)
            source, about = f"champion router {router_id}", {"router_id": router_id}
        sim = model_similarity(psi)
    except (ValueError, FileNotFoundError) as exc:
        fail(str(exc))
    with one_line_errors(OSError):
        paths = write_similarity_outputs(sim, png, f"LLM similarity ({len(sim.models)} LLMs; {source})", **about)
    if not quiet:
        for line in near_duplicate_lines(sim) or ["no near-duplicate LLMs"]:
            typer.echo(line)
        typer.echo("wrote " + ", ".join(str(p) for p in paths))
    return {"files": [str(p) for p in paths], "near_duplicates": sim.near_duplicates()}


def _champion_psi(settings):
    """The champion router's Psi, read from the store (read-only)."""
    from uniroute import store
    from uniroute.pipeline.pool import registry
    from uniroute.routers.cluster.psi import Psi

    if not settings.db_path.exists():
        raise ValueError(f"no store at {settings.db_path}: build a router first, or give --data")
    with store.opened(settings.db_path, read_only=True) as con:
        if registry.champion_id(con) is None:
            raise ValueError("the store has no router yet: run `uniroute build`, or give --data")
        champion = registry.load_champion(con)
    router = cast("Router", champion.router)  # Psi rows: a cluster router
    counts = router.psi_counts if router.psi_counts is not None else 0 * router.psi.astype(int)
    return Psi(router.models, router.psi, counts), champion.router_id
