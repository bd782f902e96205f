"""Suites: a family of benchmarks swept as one, its members x recipes table (terminal, MLflow
artifacts, `heta-eval-runs --suite`, `load_runs(suite=...)`), suite comparisons per member
with a macro average, and the reproduction matrix of published numbers.

The console scripts run in this process (a sweep with the basic launcher runs its jobs in
the process that starts it); the MLflow store they write is read back with MlflowClient.
The bundled sample's suite is swept once for the module. The UDA and SciFact runs are
marked slow. The suites' definitions are checked in tests/unit/sweep/test_suites.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from mlflow import MlflowClient

import heta_eval
from heta_eval import EvaluationReport
from heta_eval.records.suite import suite_from_config
from heta_eval.results.suite_render import to_markdown
from heta_eval.results.suite_table import build_suite_table
from heta_eval.results.sweep_rows import job_rows
from heta_eval.sweep.end import child_runs

from ...cli_in_process import CliResult, call_cli_once
from ...conftest import SHARED, InProcessCli, job_logs

UDA = SHARED / "datasets" / "uda"
BEIR = SHARED / "datasets" / "beir"


@pytest.fixture
def compare(cli: InProcessCli, monkeypatch: pytest.MonkeyPatch) -> InProcessCli:
    """`heta-eval-compare ARGS` in this process, in the terminal a user reads it in: 120
    columns, whatever the test process was given."""
    monkeypatch.setenv("COLUMNS", "120")

    def run(*args: str) -> CliResult:
        return cli(*args, program="heta-eval-compare")

    return run


def _parent(root: Path) -> Any:
    client = MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("heta_eval")
    parents = client.search_runs(
        [experiment.experiment_id], filter_string="tags.`heta_eval.kind` = 'sweep'"
    )
    assert len(parents) == 1
    children = client.search_runs(
        [experiment.experiment_id],
        filter_string=f"tags.`mlflow.parentRunId` = '{parents[0].info.run_id}'",
    )
    return client, parents[0], children


def _artifact(client: MlflowClient, run_id: str, name: str, dest: Path) -> str:
    return Path(client.download_artifacts(run_id, name, str(dest))).read_text(encoding="utf-8")


# --- the bundled sample as a suite, swept once for the module ------------------------------


@pytest.fixture(scope="module")
def sample_suite(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    cwd = tmp_path_factory.mktemp("sample-suite")
    root = cwd / "outputs"
    proc = call_cli_once(
        "heta-eval",
        ["-m", "suite=sample", "recipe=bm25,bm25_fusion", "runner.top_k=5", f"paths.root={root}"],
        cwd=cwd,
    )
    assert proc.returncode == 0, proc.stderr[-3000:] + job_logs(root)
    return root, proc.stdout


@pytest.mark.slow
def test_a_suite_sweep_ends_with_its_members_by_recipes_table(
    sample_suite: tuple[Path, str], tmp_path: Path
) -> None:
    root, stdout = sample_suite
    assert "suite sample: 2 member(s) x 2 column(s), ndcg@10" in stdout
    assert "macro average" in stdout
    client, parent, children = _parent(root)
    assert parent.data.tags["heta_eval.suite"] == "sample"
    assert len(children) == 4
    # The usual overrides reach every member; the suite sweeps its member key.
    assert {c.data.params["runner.top_k"] for c in children} == {"5"}
    assert sorted(c.data.params["benchmark.shape"] for c in children) == [
        "corpus", "corpus", "units", "units",
    ]  # fmt: skip
    names = {a.path for a in client.list_artifacts(parent.info.run_id)}
    assert {"suite_table.md", "suite_table.html", "suite_table.json"} <= names
    table = json.loads(_artifact(client, parent.info.run_id, "suite_table.json", tmp_path))
    assert table["members"] == ["corpus", "units"] and table["columns"] == ["bm25", "bm25_fusion"]
    by_run = {c.info.run_id: c for c in children}
    for cell in table["cells"]:
        child = by_run[cell["run_id"]]
        assert child.data.params["benchmark.shape"] == cell["member"]
        assert child.data.tags["recipe.name"] == cell["column"]
        assert cell["value"] == pytest.approx(child.data.metrics["ndcg_at_10"])
        assert cell["ci_low"] == pytest.approx(child.data.metrics["ndcg_at_10.ci_low"])
    for macro in table["macro"]:
        values = [c["value"] for c in table["cells"] if c["column"] == macro["column"]]
        assert macro["value"] == pytest.approx(sum(values) / 2) and macro["members"] == 2
    page = _artifact(client, parent.info.run_id, "suite_table.html", tmp_path)
    assert "<table>" in page and "macro average" in page
    # The parent's description (Markdown, rendered by the UI) starts with the table.
    note = parent.data.tags["mlflow.note.content"]
    assert note.startswith("**suite sample") and "| macro average |" in note


@pytest.mark.slow
def test_the_table_reads_back_through_the_cli_and_the_library(
    sample_suite: tuple[Path, str], cli: InProcessCli
) -> None:
    root, _ = sample_suite
    proc = cli("--suite", "sample", "--root", str(root), program="heta-eval-runs")
    assert proc.returncode == 0, proc.stderr
    assert "suite sample: 2 member(s)" in proc.stdout and "macro average" in proc.stdout
    frame = heta_eval.load_runs(root=root, suite="sample")
    assert list(frame.index) == ["corpus", "units", "macro average"]
    assert frame.attrs["suite"] == "sample" and frame.attrs["metric"] == "ndcg@10"
    assert frame.loc["macro average", "bm25"] == pytest.approx(
        (frame.loc["corpus", "bm25"] + frame.loc["units", "bm25"]) / 2
    )
    missing = cli("--suite", "uda", "--root", str(root), program="heta-eval-runs")
    assert missing.returncode == 2 and "no suite sweep for 'uda'" in missing.stderr


@pytest.mark.slow
def test_comparing_a_suite_sweep_pairs_per_member_with_a_macro_average(
    sample_suite: tuple[Path, str], compare: InProcessCli, tmp_path: Path
) -> None:
    root, _ = sample_suite
    client, parent, _ = _parent(root)
    out = tmp_path / "cmp"
    uri = f"sqlite:///{root / 'mlflow.db'}"
    proc = compare(
        parent.info.run_id, "--tracking-uri", uri, "--out", str(out), "--resamples", "500"
    )
    assert proc.returncode == 0, proc.stderr
    assert "benchmark.shape=corpus" in proc.stdout and "benchmark.shape=units" in proc.stdout
    assert "macro average over the members" in proc.stdout and "MDE" in proc.stdout
    result = json.loads((out / "suite_comparison.json").read_text())
    assert set(result["members"]) == {"corpus", "units"}
    ndcg = next(t for t in result["macro"] if t["metric"] == "ndcg@10")
    members = [
        next(r for r in result["members"][m]["rows"] if r["metric"] == "ndcg@10")["tests"][0]
        for m in ("corpus", "units")
    ]
    assert ndcg["difference"] == pytest.approx(sum(t["difference"] for t in members) / 2)
    se = math.sqrt(sum(t["power"]["sd"] ** 2 / t["paired"] for t in members)) / 2
    assert ndcg["power"]["mde"] == pytest.approx((1.959964 + 0.841621) * se, rel=1e-5)
    assert (out / "corpus" / "comparison.md").is_file()
    logged = {a.path for a in client.list_artifacts(parent.info.run_id, "suite_comparison")}
    assert "suite_comparison/suite_comparison.md" in logged


# --- real benchmarks: slow -------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(not (UDA / "qa").is_dir(), reason=f"UDA not found at {UDA}")
def test_the_uda_suite_runs_six_members_into_one_table(cli: InProcessCli, tmp_path: Path) -> None:
    root = tmp_path / "outputs"
    proc = cli("-m", "suite=uda", "recipe=bm25", f"benchmark.data_root={UDA}")
    assert proc.returncode == 0, proc.stderr[-3000:] + job_logs(root)
    assert "suite uda: 6 member(s) x 1 column(s), uda_evidence_match@5" in proc.stdout
    client, parent, children = _parent(root)
    assert len(children) == 6
    assert {c.data.params["benchmark.data_root"] for c in children} == {str(UDA)}
    table = json.loads(_artifact(client, parent.info.run_id, "suite_table.json", tmp_path))
    assert table["members"] == ["fin", "tat", "paper_text", "paper_tab", "feta", "nq"]
    assert len(table["cells"]) == 6 and all(c["value"] is not None for c in table["cells"])
    # tat is scored under our extension's name and left out of the macro average of the rest.
    metrics = {c["member"]: c["metric"] for c in table["cells"]}
    assert metrics.pop("tat") == "uda_evidence_match_ext@5"
    assert set(metrics.values()) == {"uda_evidence_match@5"}
    assert table["macro"][0]["members"] == 5
    markdown = _artifact(client, parent.info.run_id, "suite_table.md", tmp_path)
    assert markdown.count("\n| ") == 9  # header, rule, 6 members, macro average


@pytest.fixture(scope="module")
def beir_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (BEIR / "scifact" / "corpus.jsonl").is_file():
        pytest.skip(f"SciFact not found at {BEIR / 'scifact'}")
    return tmp_path_factory.mktemp("beir-suite")


@pytest.mark.slow
def test_scifact_bm25_against_bm25_fusion_reports_the_mde(
    beir_root: Path, cli: InProcessCli, compare: InProcessCli
) -> None:
    root = beir_root / "outputs"
    proc = cli("-m", "suite=beir_local", f"suite.data_root={BEIR}", "recipe=bm25,bm25_fusion",
               root=root)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:] + job_logs(root)
    assert "scifact" in proc.stdout and "0.6870 (bm25)" in proc.stdout  # published, Δ
    _, parent, _ = _parent(root)
    out = beir_root / "cmp"
    cmp = compare(
        parent.info.run_id, "--tracking-uri", f"sqlite:///{root / 'mlflow.db'}",
        "--out", str(out), "--metrics", "ndcg@10",
    )  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    scifact = json.loads((out / "suite_comparison.json").read_text())["members"]["scifact"]
    test = scifact["rows"][0]["tests"][0]
    assert scifact["rows"][0]["metric"] == "ndcg@10" and test["paired"] == 300
    power = test["power"]
    assert 0.005 < power["mde"] < 0.1 and power["sd"] > 0
    assert power["underpowered"] == (
        None if test["significant"] else abs(test["difference"]) < power["mde"]
    )
    assert f"{power['mde']:.4f}" in (out / "scifact" / "comparison.md").read_text()


@pytest.mark.slow
@pytest.mark.skipif(not (UDA / "qa").is_dir(), reason=f"UDA not found at {UDA}")
def test_reproduce_check_passes_on_the_quick_rows(beir_root: Path, cli: InProcessCli) -> None:
    data = beir_root / "data"
    data.mkdir(exist_ok=True)
    for name, target in (("uda", UDA), ("beir", BEIR)):
        if not (data / name).exists():
            (data / name).symlink_to(target)
    out = beir_root / "outputs"  # SciFact bm25 is reused from the suite sweep when it ran
    proc = cli(
        "--quick", "--check", "--data-root", str(data), "--out", str(out),
        program="heta-eval-reproduce",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-3000:]
    rows = json.loads((out / "matrix.json").read_text())
    scifact = next(r for r in rows if r["member"] == "scifact" and r["tolerance"] is not None)
    assert scifact["ok"] is True and scifact["ours"] == pytest.approx(0.687, abs=0.005)
    checked = [r for r in rows if r["tolerance"] is not None]
    assert checked and all(r["ok"] for r in checked) and not any(r["not_run"] for r in checked)
    # An unchecked row may go without a value only when its metric cannot discriminate there
    # (nq's Top-5: the document's few chunks are all in the top 5), and it says so.
    for row in rows:
        if row["not_run"]:
            assert (
                row["tolerance"] is None
                and "skipped on every case: cannot discriminate" in (row["not_run"])
            ), row
    assert all(r["quick"] for r in rows)
    # A row we do not reproduce is shown, unchecked, with how its setup differs.
    feta = [r for r in rows if r["member"] == "feta"]
    assert feta and all(r["ok"] is None and "Smallville.pdf" in r["differs"] for r in feta)
    assert "reproduction matrix" in proc.stdout


@pytest.mark.slow  # reads the sample suite's sweep (four evaluations)
def test_references_in_the_table_compare_like_with_like(
    sample_suite: tuple[Path, str], tmp_path: Path
) -> None:
    """A reference applies to its recipe and settings only; one scoped to a document is our
    mean over that document's cases, read from the run's report."""
    root, _ = sample_suite
    client, parent, _ = _parent(root)
    rows = job_rows(child_runs(client, parent.info.experiment_id, parent.info.run_id))
    ref = {"recipe": "bm25", "metric": "ndcg@10", "source": "a test"}
    suite = suite_from_config(
        {
            "name": "sample",
            "member_key": "benchmark.shape",
            "members": ["corpus", "units"],
            "metric": "ndcg@10",
            "references": [
                {**ref, "member": "corpus", "value": 0.5, "tolerance": 0.01},
                {**ref, "member": "units", "value": 0.9, "tolerance": 0.2,
                 "scope_units": ["cooking"], "cases": 12},
                {**ref, "member": "units", "value": 0.9, "overrides": ["runner.top_k=10"]},
            ],
        }
    )  # fmt: skip
    table = build_suite_table(rows, suite, client, varied=["recipe"])
    assert [(r.reference.member, r.column) for r in table.references] == [
        ("corpus", "bm25"),
        ("units", "bm25"),
    ]  # fmt: skip (the third needs runner.top_k=10; these runs have 5)
    corpus, units = table.references
    assert corpus.ours == pytest.approx(table.cells[("corpus", "bm25")].value)
    assert corpus.ok is False and corpus.delta == pytest.approx(corpus.ours - 0.5)
    run = client.get_run(units.run_id)
    report = EvaluationReport.read_json(
        Path(client.download_artifacts(units.run_id, "report.json", str(tmp_path)))
    )
    cooking = [r.score("ndcg@10") for r in report.case_results if r.unit_id == "cooking"]
    assert run.data.params["benchmark.shape"] == "units" and units.cases == len(cooking)
    assert units.ours == pytest.approx(sum(cooking) / len(cooking)) and units.ok is True
    text = to_markdown(table)
    assert "0.5000 (bm25)" in text and "✗" in text and "over 12 case(s) of cooking" in text


def test_a_suite_missing_its_data_root_or_data_stops_before_any_job(
    cli: InProcessCli, tmp_path: Path
) -> None:
    root = tmp_path / "outputs"
    proc = cli("-m", "suite=beir_local", "recipe=bm25")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.endswith(
        "heta-eval: invalid configuration\n"
        "suite.data_root: a value is required (set suite.data_root=...)\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    proc = cli("-m", "suite=beir_local", f"suite.data_root={empty}")
    assert proc.returncode == 2 and f"no BEIR dataset under {empty}" in proc.stderr
    assert "Traceback" not in proc.stderr and not (root / "mlflow.db").exists()
