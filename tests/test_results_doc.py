"""The headline quality table (docs/results.md) and its verdict on `auto` are generated from the evaluation JSONs,
never typed, and the README's headline figures are theirs."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from tools.pages import results_doc
from tools.pages.readme_block import PAGE, rewrite_block
from uniroute.settings import DEFAULT_BUILD_EMBEDDER


@pytest.fixture(scope="module")
def reports():
    return {d: results_doc._load(results_doc.RESULTS_DIR, d) for d in results_doc.DATASETS}


def test_the_quality_block_is_rewritten_from_the_reports(reports, tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("before\n<!-- quality-table -->\nstale\n<!-- /quality-table -->\nafter\n")
    rewrite_block("quality-table", results_doc.readme_quality(reports), readme)
    text = readme.read_text()
    assert text.startswith(f"before\n<!-- quality-table -->\nQuality (paper protocol, seed 0, "
                           f"`{results_doc.EMBEDDER}` embedder: the build default;") and text.endswith("after\n")
    assert "stale" not in text
    for dataset, (report, _) in reports.items():
        short = results_doc.DATASETS[dataset]["short"]
        row = next(line for line in text.splitlines() if line.startswith(f"| {short} ("))
        assert row.startswith(f"| {short} ({report['trials']}) |")
        assert f"{report['methods']['auto']['area']:.4f}".lstrip("0") in row


def test_the_results_page_holds_the_generated_block(reports) -> None:
    # The block moved from the README to docs/results.md: what the page shows is what the generator writes.
    page = PAGE.read_text()
    start, end = "<!-- quality-table -->\n", "<!-- /quality-table -->"
    assert page[page.index(start) + len(start):page.index(end)] == results_doc.readme_quality(reports)
    assert page.index(end) < page.index("## Quality")  # above the section the generator rewrites whole


def test_the_readme_headline_quotes_the_reports(reports) -> None:
    readme = (PAGE.parents[1] / "README.md").read_text()
    assert f"`{results_doc.EMBEDDER}` embedder" in readme
    quoted = dict((name, (auto, zero)) for name, auto, zero in
                  re.findall(r"(RouterBench|MMLU-Pro|RouterDC) (\.\d{4}) \((\.\d{4})\)", readme))
    assert len(quoted) == len(reports) == 3
    for dataset, (report, _) in reports.items():
        methods = report["methods"]
        assert report["trials"] == 100 and "100 trials" in readme
        assert quoted[results_doc.DATASETS[dataset]["short"]] == (
            f"{methods['auto']['area']:.4f}".lstrip("0"), f"{methods['zero']['area']:.4f}".lstrip("0")), dataset


def test_the_readme_table_is_measured_on_the_build_default_embedder(reports, tmp_path: Path) -> None:
    # One source: the table's runs, the command it prints and its label follow settings.DEFAULT_BUILD_EMBEDDER.
    assert results_doc.EMBEDDER == DEFAULT_BUILD_EMBEDDER and results_doc.EMBEDDER_LABEL
    assert f"--embedder {DEFAULT_BUILD_EMBEDDER} " in results_doc.command("mmlu_pro_cot29")
    for dataset, (report, _) in reports.items():
        results_doc.check_embedder(results_doc.RESULTS_DIR / f"{dataset}.json", report)  # the saved runs pass
    other = next(name for name in results_doc.EMBEDDER_LABELS if name != DEFAULT_BUILD_EMBEDDER)
    report = reports["routerdc_model7"][0]
    with pytest.raises(SystemExit, match=f"routerdc_model7.json: embedder {DEFAULT_BUILD_EMBEDDER}, but the build "
                                         f"default .* is {other}: re-run it with --embedder {other}"):
        results_doc.check_embedder(tmp_path / "routerdc_model7.json", report, other)


def test_the_studies_commands_name_the_embedder_their_runs_were_measured_with() -> None:
    # Their runs are not re-measured when the build default moves, so their commands keep their own embedder.
    from tools.pages import onboarding_set_doc, quality_only

    for module, folders in ((onboarding_set_doc, (onboarding_set_doc.OUT_DIR, onboarding_set_doc.ADAPTIVE_DIR)),
                            (quality_only, (quality_only.OUT_DIR,))):
        runs = [path for folder in folders for path in folder.rglob("*.json") if path.name != "runs.json"]
        ids = {json.loads(path.read_text()).get("embedder_id", module.EMBEDDER + ":").split(":")[0] for path in runs}
        assert runs and ids == {module.EMBEDDER}, module.__name__
    assert f"--embedder {quality_only.EMBEDDER} " in quality_only.command("routerdc_model7", 100, "served")
    assert f"--embedder {onboarding_set_doc.EMBEDDER} " in onboarding_set_doc.command("routerdc_model7")


def test_the_verdict_names_each_missed_check_and_only_those(reports) -> None:
    checks = [c for report, study in reports.values() for c in results_doc.auto_checks(report, study)]
    missed = [c for c in checks if not c["within"] or c["significantly_below"]]
    verdict = results_doc.readme_quality(reports).splitlines()[-1]
    assert verdict.count(" validation prompts (") == len(missed)
    assert (f"on {len(checks) - len(missed)} of {len(checks)} checks" in verdict) == bool(missed)
    # Where auto matches the best kind at every size, the verdict says it holds everywhere.
    tied = copy.deepcopy(reports)
    for report, study in tied.values():
        best = max(results_doc.CRITERION_KINDS, key=lambda k: report["methods"][k]["area"])
        report["methods"]["auto"]["area"] = report["methods"][best]["area"]
        report["sign_tests"] = {k: v for k, v in report["sign_tests"].items() if "auto" not in k}
        report["sign_tests"].update({f"auto_vs_{k}": {"wins": 0, "losses": 0, "p": 1.0} for k in
                                     results_doc.KIND_METHODS})
        if study is not None:
            study.pop("sign_tests")
            study["sign_tests"] = {f"auto_vs_{k}": [{"wins": 0, "losses": 0, "p": 1.0}] * len(study["sizes"])
                                   for k in results_doc.KIND_METHODS}
            for i in range(len(study["sizes"])):
                study["methods"]["auto"]["mean"][i] = max(study["methods"][k]["mean"][i] for k in
                                                          results_doc.CRITERION_KINDS)
    assert results_doc.readme_quality(tied).splitlines()[-1].endswith("at 25, 50 and all validation prompts on "
                                                                      "every dataset.")


def test_a_readme_without_the_block_is_an_error(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("no block here\n")
    with pytest.raises(SystemExit, match="no <!-- quality-table -->"):
        rewrite_block("quality-table", "x\n", readme)
    assert readme.read_text() == "no block here\n"


def test_the_onboarding_set_section_and_its_verdict_come_from_the_study_files() -> None:
    from tools.pages import onboarding_set_doc as doc

    text = doc.section(plots=False)  # the PNGs are the generator's to write, not a test's
    study = json.loads((doc.OUT_DIR / "routerbench_subset_valsize.json").read_text())["onboarding_set"]
    for strategy, rows in study["strategies"].items():
        first = rows[doc.METHOD][0]
        assert f"| {strategy} | UniRoute (K-means) | {first['difference']:+.4f} ± {first['half_width']:.4f}" in text
    assert doc.verdict(study) in text
    won = copy.deepcopy(study)
    for entry in won["strategies"]["allocated"][doc.METHOD]:
        entry["sign_test"] = {"wins": 70, "losses": 30, "p": 0.001}
    assert "beats random at N = 25 and 50 (p < 0.05): allocated" in doc.verdict(won)


def test_the_onboarding_set_section_points_at_the_estimators_decision_record() -> None:
    from tools.pages import onboarding_set_doc as doc

    record = doc.ROOT / "docs" / "decisions" / doc.ESTIMATORS_RECORD
    assert record.exists(), f"{record} is what the section links to"
    assert f"(decisions/{doc.ESTIMATORS_RECORD})" in doc.section(plots=False)


def test_the_onboarding_set_section_is_written_once_even_where_a_copy_ends_the_doc() -> None:
    from tools.pages import onboarding_set_doc as doc

    old = f"{doc.HEADING}\n\nold\n\n"
    text = doc.replace_section(f"# R\n\n{old}## Other\n\nkeep\n\n{old}", f"{doc.HEADING}\n\nnew\n\n")
    assert text == f"# R\n\n{doc.HEADING}\n\nnew\n\n## Other\n\nkeep\n"
    assert doc.replace_section("# R\n", "B\n") == "# R\n\nB\n"


def test_the_adaptive_note_comes_from_its_study_files(tmp_path: Path) -> None:
    from tools.pages import onboarding_set_doc as doc

    assert doc.adaptive_note(tmp_path, plots=False) == []
    entries = [{"size": n, "area": 0.8, "random_area": 0.79, "all_prompts_area": 0.82, "difference": d,
                "half_width": 0.004, "sign_test": {"wins": w, "losses": 100 - w, "p": p}, "gap_closed": 0.3}
               for n, d, w, p in ((25, 0.0061, 62, 0.02), (50, 0.0042, 61, 0.04))]
    study = {"onboarding_set": {"trials": 100, "sizes": [25, 50],
                                "strategies": {"adaptive": {doc.ADAPTIVE_METHOD: entries}}}}
    (tmp_path / "routerdc_model7_valsize.json").write_text(json.dumps(study))
    (tmp_path / "routerdc_model7.json").write_text(json.dumps({"prompt_part": "full"}))
    text = "\n".join(doc.adaptive_note(tmp_path, plots=False))
    assert "--methods kmeans_shrunk --prompt-part full --val-sizes 25,50 " in text
    assert "--val-selection adaptive,adaptive_shared" in text
    assert "| adaptive | UniRoute (K-means, count-aware Psi) | +0.0061 ± 0.0040 (62/38 *, 30% of gap)" in text
    assert "beats random at N = 25 and 50 (p < 0.05): adaptive" in text
