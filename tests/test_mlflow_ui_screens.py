"""The MLflow UI as a user sees it, in headless Chromium: a sweep logged to a real `mlflow
server` (MLFLOW_TRACKING_URI), its printed runs-table URL opened, a run's page, the chart
view and MLflow's comparison page. Each page's rendered DOM is checked; the screenshots are
written to $HETA_EVAL_SCREENS (runs-table.png, run-page.png, charts.png, comparison.png)
when set, else to the test's temporary directory.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.browser import CHROMIUM, HEADLESS_FLAGS
from tests.conftest import user_env
from tests.team_servers import mlflow_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason=f"no Chromium at {CHROMIUM}"),
]
WINDOW = "--window-size=1600,1000"


def _browse(url: str, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Open `url` (the single-page app is given 20 s of virtual time to render)."""
    return subprocess.run(
        [
            str(CHROMIUM),
            *HEADLESS_FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",
            WINDOW,
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=240,
    )


def _look(url: str, tmp: Path, png: Path) -> str:
    """Screenshot `url` into `png` and return its rendered DOM as text (one page load:
    Chromium takes the screenshot and dumps the DOM of the same rendered page)."""
    shot = _browse(url, tmp / f"profile-{png.stem}", f"--screenshot={png}", "--dump-dom")
    assert png.is_file() and png.stat().st_size > 10_000, shot.stderr[-2000:]
    return re.sub(r"<[^>]+>", " ", shot.stdout)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("ui-screens")
    env = user_env(PYTHONWARNINGS="ignore::DeprecationWarning", COLUMNS="120")
    with mlflow_server(f"sqlite:///{tmp / 'server.db'}", tmp / "artifacts", env) as url:
        env = {**env, "MLFLOW_TRACKING_URI": url}
        sweep = ("-m", f"paths.root={tmp / 'o'}", "recipe.chunk_size=null,128")
        proc = subprocess.run(
            [sys.executable, "-m", "heta_eval", *sweep],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield {"tmp": tmp, "url": url, "env": env, "proc": proc}


def _screens(tmp: Path) -> Path:
    where = Path(os.environ.get("HETA_EVAL_SCREENS") or tmp / "screens")
    where.mkdir(parents=True, exist_ok=True)
    return where


def test_the_ui_answers_which_recipe_won(served: dict[str, Any]) -> None:
    from mlflow import MlflowClient

    tmp, url, out = served["tmp"], served["url"], served["proc"].stdout
    # The sweep's own, printed last (MLflow may add its "View run" lines after it).
    table_url = [x for x in out.splitlines() if x.startswith("runs table: ")][-1][12:]
    assert table_url.startswith(f"{url}/#/experiments/") and "orderByKey=" in table_url
    screens = _screens(tmp)

    # The printed URL opens the runs table itself, best run first, names without paths.
    text = _look(table_url, tmp, screens / "runs-table.png")
    assert "#1 sample/bm25 chunk_size=128" in text and "#0 sample/bm25 chunk_size=null" in text
    assert "Sort: ndcg_at_10" in text
    assert str(tmp) not in text

    client = MlflowClient(url)
    experiment = client.get_experiment_by_name("heta_eval").experiment_id
    runs = client.search_runs([experiment])
    child = next(r for r in runs if r.info.run_name.startswith("#1 "))
    parent = next(r for r in runs if r.data.tags.get("heta_eval.kind") == "sweep")
    assert parent.info.run_name == "sweep sample/bm25 chunk_size=null,128"

    text = _look(
        f"{url}/#/experiments/{experiment}/runs/{child.info.run_id}",
        tmp,
        screens / "run-page.png",
    )
    assert "#1 sample/bm25 chunk_size=128" in text and "recipe.chunk_size" in text

    # The chart view: the Headline group first (MLflow orders groups by name, prefix-less
    # metrics last).
    text = _look(f"{table_url}&compareRunsMode=CHART", tmp, screens / "charts.png")
    sections = re.findall(r"\b(Headline|best|bm25|cache|cases|kb|Model metrics)\s*\(\d+\)", text)
    assert sections and sections[0] == "Headline", sections

    ids = quote(json.dumps([r.info.run_id for r in runs if r is not parent]))
    text = _look(
        f"{url}/#/compare-runs?runs={ids}&experiments={quote(json.dumps([experiment]))}",
        tmp,
        screens / "comparison.png",
    )
    assert "#0 sample/bm25 chunk_size=null" in text and "ndcg_at_10" in text


def test_compare_and_runs_need_no_flags_with_the_server_in_the_environment(
    served: dict[str, Any],
) -> None:
    tmp, env = served["tmp"], served["env"]
    parent = re.search(r"parent run: ([0-9a-f]{32})", served["proc"].stdout)
    assert parent is not None
    compare = subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.compare", parent.group(1), "--out", "cmp"],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert compare.returncode == 0, compare.stderr
    assert "logged to MLflow sweep run" in compare.stdout
    runs = subprocess.run(
        [sys.executable, "-m", "heta_eval.cli.runs"],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert runs.returncode == 0, runs.stderr
    assert "ndcg_at_10" in runs.stdout and "#1 sample/bm25 chunk_size=128" in runs.stdout
