"""Helpers shared by the benchmark scripts: paths, the bm25 recipe, BEIR files, timing, output.

Every script prints a human-readable table and can write its measurements as JSON
(`--json PATH`), which `run_all.py` collects. Nothing here imports heta_eval at module
level, so the floor measurement stays free of it.
"""

from __future__ import annotations

import atexit
import csv
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
DATA = REPO.parent / "shared" / "datasets"
# SciFact in BEIR's layout; SCIFACT_DIR points elsewhere (e.g. an unzipped BEIR download).
SCIFACT = Path(os.environ.get("SCIFACT_DIR") or DATA / "beir" / "scifact")

# The bm25 recipe's BM25 parameters and tokenisation (conf/recipe/bm25.yaml, BM25Index).
BM25_PARAMS = {"k1": 1.5, "b": 0.75, "delta": 0.5, "method": "lucene"}
BM25_STEMMER = "english"
BM25_STOPWORDS = "en"


def bm25_recipe(index: Mapping[str, Any] | None = None, **chunker: Any) -> Any:
    """The `bm25` recipe of conf/recipe/bm25.yaml, with chunker and BM25 settings overridden."""
    import yaml

    from heta_eval import KnowledgeRecipe

    spec = yaml.safe_load((REPO / "conf" / "recipe" / "bm25.yaml").read_text())
    spec["chunker"].update(chunk_size=spec["chunk_size"], chunk_overlap=spec["chunk_overlap"])
    spec["chunker"].update(chunker)
    spec["indexes"]["bm25"].update(index or {})
    spec["chunk_size"] = spec["chunker"]["chunk_size"]
    spec["chunk_overlap"] = spec["chunker"]["chunk_overlap"]
    return KnowledgeRecipe.model_validate(spec)


def read_beir(root: Path, split: str = "test") -> tuple[list[str], list[str], dict, dict]:
    """BEIR files as the heta_eval adapter reads them.

    Returns document ids, document texts (`title\\ntext`, stripped), the judged queries
    `{id: text}` in file order, and the qrels `{query: {doc: grade}}`.
    """
    ids: list[str] = []
    texts: list[str] = []
    with (root / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                ids.append(row["_id"])
                texts.append(f"{row.get('title') or ''}\n{row['text']}".strip())
    qrels: dict[str, dict[str, int]] = {}
    with (root / "qrels" / f"{split}.tsv").open(encoding="utf-8-sig", newline="") as handle:
        for n, row in enumerate(csv.reader(handle, delimiter="\t")):
            if row and not (n == 0 and row[0].strip().lower() in ("query-id", "query_id")):
                qrels.setdefault(row[0].strip(), {})[row[1].strip()] = int(float(row[2]))
    queries: dict[str, str] = {}
    with (root / "queries.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                row = json.loads(line)
                if qrels.get(row["_id"]):
                    queries[row["_id"]] = row["text"]
    return ids, texts, queries, qrels


# Set by a script that times another one's whole process (`run_script(..., scratch=True)`):
# that process makes its scratch directories in this one, which the timing script removes
# after the clock stops (a run's 200k-file object store takes seconds to delete, and
# deleting it is no part of an evaluation).
SCRATCH_ROOT = "HETA_BENCH_SCRATCH_ROOT"


def scratch_dir(prefix: str) -> Path:
    """A temporary directory removed when this process exits (stores, runs, MLflow), or,
    under `$HETA_BENCH_SCRATCH_ROOT`, by the process that set it."""
    root = os.environ.get(SCRATCH_ROOT)
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=root))
    if root is None:
        atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Stopwatch:
    """Named laps: `with watch("build"): ...` adds the seconds to `watch.laps["build"]`."""

    def __init__(self) -> None:
        self.laps: dict[str, float] = {}
        self._name = ""
        self._started = 0.0

    def __call__(self, name: str) -> Stopwatch:
        self._name = name
        return self

    def __enter__(self) -> Stopwatch:
        self._started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self._started
        self.laps[self._name] = self.laps.get(self._name, 0.0) + elapsed


def median_rows(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Median of each numeric field over repeated measurements (other fields: the first)."""
    out: dict[str, Any] = {}
    for key in rows[0]:
        values = [r[key] for r in rows if key in r]
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        out[key] = statistics.median(values) if numeric else values[0]
    return out


def write_json(path: Path | None, data: Any) -> None:
    """Write `data` as JSON to `path` (if given), creating its directory."""
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")


def run_script(
    script: str,
    *args: str,
    timeout: float = 1800,
    env: Mapping[str, str] | None = None,
    scratch: Path | None = None,
) -> dict[str, Any]:
    """Run `benchmarks/{script}` in a fresh interpreter (with `env` added to the
    environment) and return the JSON it wrote. With `scratch`, the script makes its scratch
    directories there and leaves them for the caller to remove (`SCRATCH_ROOT`)."""
    out = RESULTS / "tmp" / f"{Path(script).stem}-{os.getpid()}-{time.monotonic_ns()}.json"
    command = [sys.executable, str(REPO / "benchmarks" / script), *args, "--json", str(out)]
    added = {**(env or {}), **({SCRATCH_ROOT: str(scratch)} if scratch is not None else {})}
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, **added} if added else None,
    )
    if done.returncode != 0 or not out.is_file():
        raise RuntimeError(
            f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    data = json.loads(out.read_text(encoding="utf-8"))
    out.unlink()
    return data


def fmt(value: Any, digits: int = 3) -> str:
    """A table cell: numbers with `digits` significant decimals, others as text."""
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return "" if value is None else str(value)


def print_table(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> None:
    """Print `rows` as an aligned text table of `columns`."""
    cells = [[fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max([len(c), *(len(row[i]) for row in cells)]) for i, c in enumerate(columns)]
    print("  ".join(c.rjust(w) for c, w in zip(columns, widths, strict=True)))
    for row in cells:
        print("  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)))


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """(result of fn(), seconds it took)."""
    started = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - started


def sample_report(root: Path, *overrides: str) -> Path:
    """Evaluate the sample benchmark under `root` (a CLI run with `overrides`, outside any
    MLflow settings of this environment); the path of its report.json."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run(
        [sys.executable, "-m", "heta_eval", f"paths.root={root}", *overrides],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        sys.exit(f"the sample run failed:\n{proc.stderr[-3000:]}")
    line = next(x for x in proc.stdout.splitlines() if x.startswith("report: "))
    return Path(line.removeprefix("report: "))
