"""`heta-eval-export-predictions` writes only where it may (issue 36, item 12): `-o
RUN/report.json` silently replaced the run's own report with JSON Lines. A file of a run
directory is never replaced; another existing file only with `--force`."""

from __future__ import annotations

from pathlib import Path

import pytest

from heta_eval import EvaluationReport

from ..conftest import InProcessCli

EXPORT = "heta-eval-export-predictions"


@pytest.fixture
def run_dir(cli: InProcessCli, tmp_path: Path) -> Path:
    done = cli("tracking=none", "runner.limit=2")
    assert done.returncode == 0, done.stderr
    (report,) = (tmp_path / "outputs").glob("runs/*/*/report.json")
    return report.parent


@pytest.mark.parametrize("name", ["report.json", "report.html"])
def test_a_file_of_the_run_directory_is_never_replaced(
    cli: InProcessCli, run_dir: Path, name: str
) -> None:
    target = run_dir / name
    before = target.read_bytes()
    for extra in ([], ["--force"]):
        done = cli(str(run_dir), "-o", str(target), *extra, program=EXPORT)
        assert done.returncode == 2, done.stdout + done.stderr
        assert f"{target} is a file of the run directory {run_dir}" in done.stderr
        assert target.read_bytes() == before
    EvaluationReport.read_json(run_dir / "report.json")  # still the run's report


def test_an_existing_file_elsewhere_is_replaced_only_with_force(
    cli: InProcessCli, run_dir: Path, tmp_path: Path
) -> None:
    out = tmp_path / "answers.jsonl"
    out.write_text("mine\n", encoding="utf-8")
    done = cli(str(run_dir), "-o", str(out), program=EXPORT)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{out} exists; give --force to replace it" in done.stderr
    assert out.read_text() == "mine\n"
    done = cli(str(run_dir), "-o", str(out), "--force", program=EXPORT)
    assert done.returncode == 0, done.stderr
    assert len(out.read_text().splitlines()) == 2


def test_a_new_file_is_written(cli: InProcessCli, run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "new" / "answers.jsonl"
    done = cli(str(run_dir), "-o", str(out), program=EXPORT)
    assert done.returncode == 0, done.stderr
    assert "2 predictions of query mode 'bm25' written" in done.stdout
