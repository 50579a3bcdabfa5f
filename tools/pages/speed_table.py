"""Regenerate docs/results.md's speed table from the speed and scale results in benchmarks/results/.

Each row quotes one JSON written by a benchmark (the command that wrote it is in the JSON), with its target and
the machine's load average while it ran: the 2 cores are shared, so a figure without its load says little.
The table sits between the markers `<!-- speed-table -->` and `<!-- /speed-table -->` in docs/results.md.

Run: `.venv/bin/python -m tools.pages.speed_table` (after `make bench` or any single benchmark).
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.runner import RESULTS_DIR as RESULTS
from tools.pages.readme_block import PAGE, rewrite_block


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / name
    return json.loads(path.read_text()) if path.exists() else None


def _load_text(values: Any) -> str:
    """The 1-minute load average, or the range of the values given."""
    if not values:
        return "?"
    flat = [v[0] if isinstance(v, list) else v for v in values]
    low, high = min(flat), max(flat)
    return f"{low:.0f}" if round(low) == round(high) else f"{low:.0f}-{high:.0f}"


def _embedding_rows(data: dict[str, Any]) -> list[str]:
    section = data["throughput"]
    figures = section["figures"]
    load = _load_text([section.get("load_average_before"), section.get("load_average_after")])
    rates = [f"`{name}` {figures[name]['prompts_per_s']:,.0f}/s ({figures[name]['speedup_vs_bare']:.1f}x)"
             for name in ("static", "minilm-onnx", "minilm") if name in figures]
    return [f"| embed 2,000 real prompts (x bare sentence-transformers) | {', '.join(rates)} | - | {load} | "
            "`benchmarks/speed/embedding.py` |"]


def _route_rows(data: dict[str, Any]) -> list[str]:
    one, file = data["one_prompt"], data["file"]
    machine = data["machine"]
    load = _load_text([machine.get("load_average_before"), machine.get("load_average_after")])
    return [
        f"| `uniroute route`, one prompt, warm (snapshot) / cold | {one['warm_from_snapshot']['median_seconds']:.2f} s"
        f" / {one['cold_seconds']:.2f} s | {one['target_seconds']} s | {load} | `benchmarks/speed/route_command.py` |",
        f"| `uniroute route --file`, {data['config']['file_prompts']:,} prompts | {file['prompts_per_second']:,} "
        f"prompts/s (embedder alone {file['embedder_prompts_per_second_in_process']:,}/s) | - | {load} | "
        "`benchmarks/speed/route_command.py` |",
    ]


def _serving_rows(data: dict[str, Any]) -> list[str]:
    served, machine = data["served"], data["machine"]
    load = _load_text([machine.get("load_average_at_start"), machine.get("load_average_after")])
    ceiling, batch = served["trivial"], data["config"]["batch"]
    on, off = served["recording_on"], served["recording_off"]
    ratio = data["ratio_to_trivial"]
    predict = data.get("in_process_predict", {})
    direct = (f"; predict called directly {predict['recording_on']['decisions_per_cpu_second']:,} per CPU s"
              if "recording_on" in predict else "")
    where = "`benchmarks/speed/serving.py`"
    return [
        f"| served model (`mlflow models serve`, one worker), one-prompt requests/s, recording on / off (p50 ms) | "
        f"{on['requests_per_second']:,.0f} / {off['requests_per_second']:,.0f} ({on['p50_ms']:.1f} / "
        f"{off['p50_ms']:.1f}): {ratio['recording_on']:.0%} / {ratio['recording_off']:.0%} of a trivial pyfunc's "
        f"{ceiling['requests_per_second']:,.0f} | {data['target_ratio']:.0%} of the trivial pyfunc's | {load} | "
        f"{where} |",
        f"| served model, batches of {batch}: decisions/s, recording on / off | {on['decisions_per_second']:,.0f} / "
        f"{off['decisions_per_second']:,.0f} (trivial pyfunc {ceiling['decisions_per_second']:,.0f} rows/s{direct}) "
        f"| {data['target_decisions_per_second']:,} | {load} | {where} |",
    ]


def _gateway_rows(data: dict[str, Any]) -> list[str]:
    arms, added = data["arms"], data["added"]
    load = _load_text([data.get("load_average_before"), data.get("load_average_after")])
    direct, litellm, gateway = arms["direct"], arms["litellm"], arms["gateway"]
    where = "`benchmarks/speed/gateway.py`"
    return [
        f"| gateway, one request at a time, p50 ms: direct to the backend / LiteLLM alone (model fixed) / gateway "
        f"(routed, recorded) | {direct['sequential_p50_ms']:.1f} / {litellm['sequential_p50_ms']:.1f} / "
        f"{gateway['sequential_p50_ms']:.1f}: {added['added_p50_ms_over_litellm']:+.1f} ms over LiteLLM | "
        f"+2 ms over LiteLLM | {load} | {where} |",
        f"| gateway, saturated (16 in flight, one worker), requests/s: direct / LiteLLM / gateway (server CPU ms per "
        f"request) | {direct['saturated_requests_per_s']:,.0f} / {litellm['saturated_requests_per_s']:,.0f} / "
        f"{gateway['saturated_requests_per_s']:,.0f} ({direct['saturated_server_cpu_ms_per_request']:.1f} / "
        f"{litellm['saturated_server_cpu_ms_per_request']:.1f} / {gateway['saturated_server_cpu_ms_per_request']:.1f}):"
        f" {added['rps_share_of_litellm']:.0%} of LiteLLM's | 80% of LiteLLM's | {load} | {where} |",
    ]


def _short_path_rows(data: dict[str, Any]) -> list[str]:
    machine = data["machine"]
    load = _load_text([machine.get("load_average_before"), machine.get("load_average_after")])
    bare = data["bare_python"]["median_seconds"]
    rows = []
    for name in ("help", "route", "onboard"):
        figure = data[name]
        cpu = figure.get("cpu_seconds")
        cpu_text = f", {sorted(cpu)[len(cpu) // 2]:.2f} CPU s" if cpu else ""
        if first := figure.get("first_after_a_store_write"):  # the one route that reads the store, shown beside
            cpu_text += f" (the first after a write to the store reads it: {first['seconds']:.2f} s)"
        rows.append(f"| {figure['command']}, median wall (bare `python -c pass`: {bare:.2f} s) | "
                    f"{figure['median_seconds']:.2f} s{cpu_text} | {figure['target_seconds']:g} s | {load} | "
                    "`benchmarks/speed/short_paths.py` |")
    return rows


def _evaluate_rows(data: dict[str, Any]) -> list[str]:
    load = _load_text([data.get("load_average_before"), data.get("load_average_after")])
    projected = data.get("cpu_bound_minutes_per_100_trials")
    per_100 = f"; {projected:.1f} min per 100 trials CPU-bound" if projected is not None else ""
    return [f"| evaluate on {data['dataset']}, every method incl. `auto` | {data['trials']} trials in "
            f"{data['wall_minutes']:.1f} min{per_100} | 8 min per 100 | {load} | `benchmarks/speed/evaluate.py` |"]


def _build_rows(data: dict[str, Any]) -> list[str]:
    section = data.get("sections", {}).get("synthetic")
    if not section or "build" not in section:
        return []
    config, build = section["config"], section["build"]
    peak_gb = section.get("watchdog_highest_rss_mb", 0) / 1024
    load = _load_text([section.get("load_average_start"), section.get("load_average_end")])
    return [f"| build {config['prompts']:,} prompts x {config['models']} LLMs (`{config.get('embedder', 'tfidf')}`) | "
            f"{build['seconds_total']:.0f} s, peak {peak_gb:.1f} GB | 300 s, 4 GB | {load} | "
            "`benchmarks/scale/synthetic.py` |"]


OTHER_INGEST_FORMATS = {"wide": "RouterBench wide CSV", "routerdc": "RouterDC JSON list", "pairwise": "pairwise CSV"}


def _ingest_memory_rows(data: dict[str, Any]) -> list[str]:
    """One row for the long CSV (its peak at each size measured, the JSON-lines peak, and the earlier figures), then
    one for each other format measured."""
    runs = {key: run for key, run in data.get("runs", {}).items() if not run.get("whole")}
    whole_runs = {(run["format"], round(run["file_mb"] / 10)): run for run in data.get("runs", {}).values()
                  if run.get("whole")}
    csv = sorted((r for r in runs.values() if r["format"] == "csv"), key=lambda r: r["file_mb"])
    jsonl = [r for r in runs.values() if r["format"] == "jsonl"]
    if not csv:
        return []
    load = _load_text([r[k] for r in (*csv, *jsonl) for k in ("load_average_before", "load_average_after")])
    sizes = " / ".join(f"{r['file_mb']:.0f}" for r in csv)
    peaks = " / ".join(f"{r['peak_rss_mb']:,.0f}" for r in csv)
    largest = csv[-1]
    blocks = data.get("blocks_first_cut", {}).get("peak_rss_mb", {}).get(f"csv-{largest['file_mb']:.0f}mb")
    whole = data.get("before", {}).get("peak_rss_mb")
    was = [f"{blocks:,.0f} MB in 8 MB blocks" if blocks else "", f"{whole:,.0f} MB read whole" if whole else ""]
    was_text = f" ({largest['file_mb']:.0f} MB: was {', '.join(w for w in was if w)})" if any(was) else ""
    growth = largest["peak_rss_mb"] / csv[0]["peak_rss_mb"]
    measured = f"{peaks} MB: {growth:.2f}x from the smallest to the largest{was_text}"
    measured += "".join(f"; JSON lines, {r['file_mb']:.0f} MB: {r['peak_rss_mb']:,.0f} MB" for r in jsonl)
    rows = [f"| `uniroute ingest`, junk long CSV of {sizes} MB, peak RSS | {measured} | a small multiple of a batch | "
            f"{load} | `python -m benchmarks.speed.ingest_memory --mb {largest['file_mb']:.0f} [--format jsonl]` |"]
    for fmt, name in OTHER_INGEST_FORMATS.items():
        measured_runs = sorted((r for r in runs.values() if r["format"] == fmt), key=lambda r: r["file_mb"])
        if not measured_runs:
            continue
        sizes = " / ".join(f"{r['file_mb']:.0f}" for r in measured_runs)
        peaks = " / ".join(f"{r['peak_rss_mb']:,.0f}" for r in measured_runs)
        growth = measured_runs[-1]["peak_rss_mb"] / measured_runs[0]["peak_rss_mb"]
        whole_text = "".join(f"; read whole, {w['file_mb']:.0f} MB: {w['peak_rss_mb']:,.0f} MB"
                             for r in measured_runs if (w := whole_runs.get((fmt, round(r["file_mb"] / 10)))))
        load = _load_text([r[k] for r in measured_runs for k in ("load_average_before", "load_average_after")])
        rows.append(f"| `uniroute ingest`, junk {name} of {sizes} MB, peak RSS | {peaks} MB: {growth:.2f}x from the "
                    f"smallest to the largest{whole_text} | a small multiple of a batch | {load} | `python -m "
                    f"benchmarks.speed.ingest_memory --mb {measured_runs[-1]['file_mb']:.0f} --format {fmt}` |")
    return rows


def _silence_rows(data: dict[str, Any]) -> list[str]:
    load = _load_text([data.get("load_average_before"), data.get("load_average_after")])
    gaps = " / ".join(f"{gap['seconds']:g}" for gap in data["longest_gaps"])
    build = data.get("command") == "build"
    options = (" --command build" if build else "") + (" --cold" if data.get("cold") else "")
    what = "`uniroute build` (RouterBench subset)" if build else "`make run`"
    return [f"| {what}{' cold' if data.get('cold') else ''}: longest silences, s (wall {data['wall_seconds']:.0f} s) | "
            f"{gaps} | {data['target_seconds']:g} s | {load} | "
            f"`python -m benchmarks.speed.make_run_silence{options}` |"]


def speed_table() -> str:
    """The Markdown table, with the machine it was measured on."""
    rows: list[str] = []
    machine: dict[str, Any] = {}
    for name, make_rows in (("embedding.json", _embedding_rows), ("route_command.json", _route_rows),
                            ("serving.json", _serving_rows), ("gateway.json", _gateway_rows),
                            ("short_paths.json", _short_path_rows),
                            ("evaluate.json", _evaluate_rows), ("pipeline.json", _build_rows),
                            ("ingest_memory.json", _ingest_memory_rows), ("make_run_silence.json", _silence_rows),
                            ("build_silence.json", _silence_rows)):
        data = _load(name)
        if data is not None:
            rows += make_rows(data)
            machine = machine or data.get("machine", {})
    head = (f"Measured on {machine.get('nproc', 2)} cores ({machine.get('cpu', 'CPU')}), "
            f"{machine.get('memory_gb', '?')} GB, shared with other work (load = 1-minute load average):\n\n"
            "| what | measured | target | load | benchmark |\n|---|---|---|---|---|\n")
    return head + "\n".join(rows) + "\n"


def main() -> None:
    rewrite_block("speed-table", speed_table())
    print(f"rewrote the speed table in {PAGE}")


if __name__ == "__main__":
    main()
