"""A new SQLite store copied from the template (heta_eval/tracking/store_template.py) is the
store MLflow makes itself: the same schema, alembic version, rows and default experiment."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from mlflow import MlflowClient

from heta_eval.tracking.sqlite_store import open_client
from heta_eval.tracking.store_template import TEMPLATE_DIR, template_path

PRAGMAS = ("page_size", "encoding", "auto_vacuum", "journal_mode", "user_version", "application_id")


def _definition(sql: str | None) -> tuple[str, ...]:
    """A CREATE statement's lines, sorted: MLflow's batch migrations on SQLite write a
    recreated table's constraints in an order that varies from process to process (two
    stores MLflow makes itself under different PYTHONHASHSEEDs differ in it), and the order
    of constraints means nothing to SQLite."""
    return tuple(sorted(line.strip().rstrip(",") for line in (sql or "").splitlines()))


def _dump(database: Path) -> dict[str, object]:
    with sqlite3.connect(database) as con:
        schema = sorted(
            (kind, name, table, _definition(sql))
            for kind, name, table, sql in con.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master"
            )
        )
        tables = [name for kind, name, _, _ in schema if kind == "table"]
        rows = {
            t: sorted(map(repr, con.execute(f'SELECT * FROM "{t}"').fetchall())) for t in tables
        }
        pragmas = {p: con.execute(f"PRAGMA {p}").fetchall() for p in PRAGMAS}
        experiments = [
            dict(zip([c[0] for c in cursor.description], row, strict=True))
            for cursor in [con.execute("SELECT * FROM experiments")]
            for row in cursor.fetchall()
        ]
    return {"schema": schema, "rows": rows, "pragmas": pragmas, "experiments": experiments}


def test_a_store_copied_from_the_template_is_the_store_mlflow_makes_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("HETA_EVAL_CACHE", str(cache))
    began = int(time.time() * 1000)

    # MLflow's own creation path: its client on a new SQLite file, in its own directory.
    own_dir, copied_dir = tmp_path / "own", tmp_path / "copied"
    own_dir.mkdir()
    copied_dir.mkdir()
    monkeypatch.chdir(own_dir)
    MlflowClient(tracking_uri=f"sqlite:///{own_dir / 'mlflow.db'}").search_experiments()

    # Ours: the template is made in the (empty) cache, then copied.
    monkeypatch.chdir(copied_dir)
    assert not template_path(cache).exists()
    client = open_client(f"sqlite:///{copied_dir / 'mlflow.db'}")
    assert [e.name for e in client.search_experiments()] == ["Default"]
    (template,) = (cache / TEMPLATE_DIR).glob("*.db")
    assert template == template_path(cache)
    with sqlite3.connect(template) as con:  # tables only: MLflow adds the default experiment
        assert con.execute("SELECT COUNT(*) FROM experiments").fetchone() == (0,)
    ended = int(time.time() * 1000)

    own, copied = _dump(own_dir / "mlflow.db"), _dump(copied_dir / "mlflow.db")
    assert copied["schema"] == own["schema"]
    assert copied["pragmas"] == own["pragmas"]
    assert copied["rows"]["alembic_version"] == own["rows"]["alembic_version"]
    assert len(own["rows"]["alembic_version"]) == 1
    for table in own["rows"]:
        if table != "experiments":
            assert copied["rows"][table] == own["rows"][table], table
    # The default experiment: the same row but for what depends on where and when it was
    # made, which is where and when this store was made, as MLflow would have it.
    (own_default,) = own["experiments"]
    (copied_default,) = copied["experiments"]
    varying = {"artifact_location", "creation_time", "last_update_time"}
    assert {k: v for k, v in copied_default.items() if k not in varying} == {
        k: v for k, v in own_default.items() if k not in varying
    }
    assert copied_default["experiment_id"] == 0 and copied_default["name"] == "Default"
    assert own_default["artifact_location"] == str(own_dir / "mlruns" / "0")
    assert copied_default["artifact_location"] == str(copied_dir / "mlruns" / "0")
    for row in (own_default, copied_default):
        assert began <= row["creation_time"] == row["last_update_time"] <= ended


def test_the_template_is_made_once_and_copied_for_every_new_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HETA_EVAL_CACHE", str(tmp_path / "cache"))
    first = open_client(f"sqlite:///{tmp_path / 'a' / 'mlflow.db'}")
    template = template_path(tmp_path / "cache")
    made = template.stat().st_mtime_ns
    first.create_experiment("only-in-a")
    second = open_client(f"sqlite:///{tmp_path / 'b' / 'mlflow.db'}")
    assert template.stat().st_mtime_ns == made
    assert [e.name for e in second.search_experiments()] == ["Default"]
    assert sorted(e.name for e in first.search_experiments()) == ["Default", "only-in-a"]
    run = second.create_run(second.get_experiment_by_name("Default").experiment_id)
    second.log_metric(run.info.run_id, "m", 1.5)
    assert second.get_run(run.info.run_id).data.metrics == {"m": 1.5}


def test_without_a_usable_cache_mlflow_makes_the_store_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_directory = tmp_path / "cache"
    not_a_directory.write_text("a file where the cache directory would be")
    monkeypatch.setenv("HETA_EVAL_CACHE", str(not_a_directory))
    client = open_client(f"sqlite:///{tmp_path / 'new' / 'mlflow.db'}")
    assert [e.name for e in client.search_experiments()] == ["Default"]
    assert not_a_directory.read_text() == "a file where the cache directory would be"
    # No partial copy left beside the store.
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["mlflow.db", "mlflow.db.lock"]
