"""How heta_eval names things in trackers: MLflow-safe metric names and flat params."""

from __future__ import annotations

import hashlib
import os
import re
import statistics
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from heta_eval.config.secrets import mask_secrets
from heta_eval.records import EvaluationReport
from heta_eval.records.latency import mode_latencies

MAX_PARAM_VALUE = 6000  # MLflow's limit on a param value
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. /]")


MAX_KEY = 250  # MLflow's limit on a metric, param or tag key
SEGMENT_CHARS = 80  # a slice label or value kept whole up to this length
_MLFLOW_KEY = re.compile(r"^[/\w.\- :]*$")


def metric_name(name: str) -> str:
    """MLflow-safe form of a metric name: `bm25.ndcg@10` becomes `bm25.ndcg_at_10`.

    MLflow accepts letters, digits, `_ - . /` and spaces; `@` is spelled `_at_` and anything
    else becomes `_`. Path segments MLflow would read as a different name (empty, `.`, `..`)
    become `_`, and a name longer than MLflow's 250 characters is cut and given a short hash
    of the whole name, so it stays distinct.
    """
    safe = _UNSAFE.sub("_", name.replace("@", "_at_"))
    safe = "/".join("_" if part in ("", ".", "..") else part for part in safe.split("/"))
    if len(safe) > MAX_KEY:
        safe = f"{safe[: MAX_KEY - 9]}-{_short_hash(name)}"
    return safe


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]


def slice_segment(text: str) -> str:
    """A slice label or value as one metric-name segment, distinct for distinct inputs: kept
    as it is when it is safe and short, else made safe, cut and given a short hash of the
    original (`a!b` and `a?b` become `a_b-1f2e...` and `a_b-9c0d...`)."""
    safe = metric_name(text.replace("/", "_"))
    if safe == text and len(text) <= SEGMENT_CHARS:
        return text
    return f"{safe[:SEGMENT_CHARS]}-{_short_hash(text)}"


def slice_metric_name(label: str, value: str, metric: str) -> str:
    """`slice/{label}/{value}/{metric}`, within MLflow's limits and unique per label."""
    return metric_name(f"slice/{slice_segment(label)}/{slice_segment(value)}/{metric}")


def key_problem(key: str) -> str | None:
    """Why MLflow would refuse `key` as a metric or param key; None when it is valid."""
    import posixpath

    if not key:
        return "empty key"
    if len(key) > MAX_KEY:
        return f"longer than {MAX_KEY} characters"
    if not _MLFLOW_KEY.match(key):
        return "characters other than letters, digits, _ - . / : and spaces"
    norm = posixpath.normpath(key)
    if norm != key or norm == "." or norm.startswith(("..", "/")):
        return f"would be read as the path {norm!r}"
    return None


def table_column(name: str, taken: Mapping[str, object] | None = None) -> str:
    """A column name MLflow's table viewer shows: `label.difficulty` becomes `label_difficulty`.

    The viewer (MLflow 3.17, TanStack Table) reads a column name with a dot as a nested path
    (`row["label"]["difficulty"]`) in rows that are flat, so such a column shows blank. A
    dot becomes `_`; if that name is `taken` already, `__`, then a numeric suffix.
    """
    candidates = [name.replace(".", "_"), name.replace(".", "__")]
    for candidate in candidates:
        if taken is None or candidate not in taken:
            return candidate
    n = 2
    while f"{candidates[0]}_{n}" in taken:
        n += 1
    return f"{candidates[0]}_{n}"


def viewer_columns(columns: Mapping[str, list[Any]]) -> dict[str, list[Any]]:
    """The same table with every column renamed by `table_column` (order kept)."""
    renamed: dict[str, list[Any]] = {}
    for name, values in columns.items():
        renamed[table_column(name, renamed)] = values
    return renamed


def viewer_renders(name: object) -> bool:
    """Whether MLflow's table viewer shows the column `name` (a non-empty text without a dot)."""
    return isinstance(name, str) and bool(name) and "." not in name


def source_name() -> str:
    """What `mlflow.source.name` says for runs this process starts, as MLflow's own context
    would (the main file), except `python -m package`, named so rather than `__main__.py`."""
    main = sys.argv[0] if sys.argv and sys.argv[0] else ""
    if not main:
        return "<console>"
    if os.path.basename(main) == "__main__.py":
        return f"python -m {os.path.basename(os.path.dirname(os.path.abspath(main)))}"
    return main


# Overrides that say where a run writes or how it shows progress, not what it evaluates:
# never in its name (they stay in the tag `heta_eval.overrides`).
NOT_IN_RUN_NAME = ("paths.", "tracking.", "hydra.", "runner.output_dir", "runner.store_dir",
                   "runner.state_dir", "runner.cache_dir", "runner.workspace_dir",
                   "runner.progress", "runner.dry_run")  # fmt: skip
NAMED_GROUPS = ("benchmark", "recipe")  # the run name starts with their names
MAX_RUN_NAME = 60


_LOCATION_KEYS = ("root", "dir", "path", "file", "uri", "url", "location")


def is_location(key: str, value: object) -> bool:
    """Whether a setting says where something is (a path, a URI), not what is evaluated:
    a key ending in root, dir, path, file, uri, url or location (`benchmark.data_root`,
    `runner.cache_dir`), or a value that is an absolute or home path or a URI."""
    last = key.lstrip("+~").rsplit(".", 1)[-1].lower()
    if any(last == k or last.endswith(f"_{k}") for k in _LOCATION_KEYS):
        return True
    text = str(value).replace("\\", "")
    return text.startswith(("/", "~/", "./", "../")) or "://" in text


def plain_override(override: str) -> str:
    """An override as the value reads, without Hydra's escapes: `tracking.uri=sqlite\\:///x`
    is `tracking.uri=sqlite:///x` (an escaped space stays escaped: overrides are joined by
    spaces in the tag `heta_eval.overrides`)."""
    key, sep, value = override.partition("=")
    return key + sep + re.sub(r"\\([^\s])", r"\1", value)


def evaluated_overrides(overrides: Sequence[str]) -> list[str]:
    """The overrides that change what is evaluated (not locations or progress display)."""
    return [o for o in overrides if not o.lstrip("+~").startswith(NOT_IN_RUN_NAME)]


def short_overrides(overrides: Sequence[str], named: str = "") -> list[str]:
    """The overrides that say what a run evaluated, keys cut to their last part where that
    stays unambiguous: `recipe.chunk_size=64` is `chunk_size=64`. Left out: `recipe=bm25`,
    locations (`paths.root=...`, `benchmark.data_root=/data/...`, any path or URI) and a
    benchmark setting whose value `named` (the run name's `benchmark/recipe`) already says
    (`dataset=scifact` of `beir-scifact`)."""
    words = set(re.split(r"[-/_ ]", named)) if named else set()
    kept = []
    for override in overrides:
        key, _, value = plain_override(override).partition("=")
        key = key.lstrip("+~")
        if key in NAMED_GROUPS or key.startswith(NOT_IN_RUN_NAME) or is_location(key, value):
            continue
        if key.startswith("benchmark.") and value in words:
            continue
        kept.append((key, value))
    last = [key.rsplit(".", 1)[-1] for key, _ in kept]
    return [
        f"{tail if last.count(tail) == 1 else key}={value}"
        for (key, value), tail in zip(kept, last, strict=True)
    ]


def run_name(benchmark: str, recipe: str, overrides: Sequence[str], job: int | None = None) -> str:
    """A short MLflow run name: `sample/bm25 chunk_size=64 top_k=5`, at most MAX_RUN_NAME
    characters (the overrides are all in the tag `heta_eval.overrides` and the params). A
    sweep's job starts with its number, `#2 sample/bm25 …`: MLflow's runs table shows a
    name's first 15 or so characters, which the number keeps apart."""
    first = [f"#{job}"] if job is not None else []
    named = f"{benchmark}/{recipe}"
    name = " ".join([*first, named, *short_overrides(overrides, named)])
    return name if len(name) <= MAX_RUN_NAME else name[: MAX_RUN_NAME - 1] + "…"


_KEY_SAFE = re.compile(r"[A-Za-z0-9_\-. ]")


def param_key_segment(key: object) -> str:
    """One config key as a segment of an MLflow param name: letters, digits, `_ - .` and
    spaces are kept, every other character is percent-encoded (UTF-8) with `:` in place of
    `%`, which MLflow does not accept: `text/*` is `text:2F:2A`, `segments+json` is
    `segments:2Bjson`. The rule is stable and reversible (`original_param_key`)."""
    return "".join(
        ch if _KEY_SAFE.fullmatch(ch) else "".join(f":{b:02X}" for b in ch.encode("utf-8"))
        for ch in str(key)
    )


def original_param_key(name: str) -> str:
    """The config path a param name was made from (`param_key_segment` undone):
    `recipe.parser.parsers.text:2F:2A._target_` is `recipe.parser.parsers.text/*._target_`."""
    from urllib.parse import unquote

    return unquote(re.sub(r":([0-9A-F]{2})", r"%\1", name))


def flatten(config: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Yield (dotted key, leaf value) pairs of a nested mapping, each key made loggable by
    `param_key_segment`; lists stay whole."""
    for key, value in config.items():
        dotted = f"{prefix}{param_key_segment(key)}"
        if isinstance(value, Mapping) and value:
            yield from flatten(value, f"{dotted}.")
        else:
            yield dotted, value


def value_text(value: Any) -> str:
    """A config value as YAML would write it inline: `null`, `true`, `1.5`, `text`,
    `[bm25, dense]`, `{a: 1}` (never Python's `None`, `True` or `['bm25']`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {value_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    return str(value)


def param_value(value: Any) -> str:
    """Text of a param value (`value_text`), cut to MLflow's limit with a visible marker."""
    text = value_text(value)
    if len(text) > MAX_PARAM_VALUE:
        marker = "...[truncated]"
        text = text[: MAX_PARAM_VALUE - len(marker)] + marker
    return text


def flat_params(config: Mapping[str, Any]) -> dict[str, str]:
    """Flattened, secret-masked, length-safe params for a resolved config."""
    return {key: param_value(value) for key, value in flatten(mask_secrets(config))}


RUN_DIR_PARAM = "runner.output_dir"  # logged as the tag RUN_DIR_TAG, not as a param
RUN_DIR_TAG = "heta_eval.run_dir"


def logged_params(config: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """(params, tags) a run logs for its resolved config: `flat_params`, except the run's own
    directory, which differs for every run (as a param, MLflow's comparison page would show
    it first as what differs): it is the tag `heta_eval.run_dir`."""
    params = flat_params(config)
    run_dir = params.pop(RUN_DIR_PARAM, None)
    tags = {RUN_DIR_TAG: run_dir} if run_dir and run_dir != "null" else {}
    return params, tags


# -- what a run evaluated, named the same way for every recipe ------------------------------

PRIMARY_MODE_TAG = "heta_eval.primary_query_mode"
HEADLINE_TAG = "heta_eval.headline_metric"
PREFERRED_HEADLINE = "ndcg@10"
RUN_PARAM_PREFIX = "eval."
HEADLINE_STATS = ("ci_low", "ci_high")


def headline_metrics(report: EvaluationReport) -> list[tuple[str, float]]:
    """The primary query mode's metrics under mode-free names (`ndcg_at_10`, with
    `ndcg_at_10.ci_low` / `.ci_high` and the latency metrics of `latency_metrics`), so
    that runs of recipes whose modes differ (bm25, dense, hybrid) share columns in MLflow.
    The mode-prefixed names (`bm25.ndcg_at_10`) are logged as well."""
    mode = report.primary_query_mode
    if mode is None:
        return []
    prefix = f"{mode}."
    found: list[tuple[str, float]] = []
    for key, value in sorted(report.score_summary.items()):
        if key.startswith(prefix):
            found.append((metric_name(key[len(prefix) :]), value))
    for key, detail in sorted(report.score_details.items()):
        if key.startswith(prefix):
            for stat in HEADLINE_STATS:
                value = getattr(detail, stat)
                if value is not None:
                    found.append((metric_name(f"{key[len(prefix) :]}.{stat}"), float(value)))
    # The batch size stays with the mode (`bm25.latency_batch_size`): a setting of the run,
    # not a measurement to line runs up by.
    found += [m for m in latency_metrics(report, mode) if m[0] != "latency_batch_size"]
    return found


def latency_metrics(report: EvaluationReport, mode: str) -> list[tuple[str, float]]:
    """A mode's latency metrics, named for how the latencies were measured: the percentiles
    `latency_p50_seconds` / `latency_p95_seconds` of queries measured alone; for a mode
    whose queries were retrieved in batches (`runner.query_batch_size`),
    `latency_mean_batched_seconds` (seconds per query over the batches) and
    `latency_batch_size` (the largest batch) instead, since a batch mean has no percentiles."""
    found = mode_latencies(report.case_results, mode)
    if found.is_batched:
        return [
            ("latency_mean_batched_seconds", found.batched_mean or 0.0),
            ("latency_batch_size", float(found.largest_batch or 0)),
        ]
    if not found.alone:
        return []
    alone = list(found.alone)
    return [
        ("latency_p50_seconds", _percentile(alone, 50)),
        ("latency_p95_seconds", _percentile(alone, 95)),
    ]


def headline_metric(report: EvaluationReport) -> str | None:
    """The run's headline score, mode-free and MLflow-safe (`ndcg_at_10`): nDCG@10 when the
    primary query mode has it, else the first of the run's evaluators that it has."""
    mode = report.primary_query_mode
    if mode is None:
        return None
    scored = [m for m in report.run.evaluators if f"{mode}.{m}" in report.score_summary]
    if not scored:
        return None
    return metric_name(PREFERRED_HEADLINE if PREFERRED_HEADLINE in scored else scored[0])


def _percentile(values: list[float], q: int) -> float:
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def run_params(report: EvaluationReport) -> dict[str, str]:
    """Params that say what was evaluated, with the same keys for every recipe and benchmark
    (`eval.benchmark`, `eval.primary_query_mode`, `eval.query_modes`, `eval.top_k`,
    `eval.cases`), whatever the configuration spelled (e.g. `runner.top_k=null`)."""
    cases = len({(r.unit_id, r.case_id) for r in report.case_results})
    values = {
        "benchmark": report.benchmark.key,
        "primary_query_mode": report.primary_query_mode,
        "query_modes": ",".join(report.query_modes),
        "top_k": report.run.top_k,
        "cases": cases,
    }
    return {RUN_PARAM_PREFIX + k: param_value(v) for k, v in values.items()}


def benchmark_digest(report: EvaluationReport) -> str:
    """A short fingerprint of the evaluated data: benchmark key and the evaluated case ids."""
    digest = hashlib.sha256(report.benchmark.key.encode("utf-8"))
    for unit_id, case_id in sorted({(r.unit_id, r.case_id) for r in report.case_results}):
        digest.update(f"\0{unit_id}\0{case_id}".encode())
    return digest.hexdigest()[:16]


def benchmark_dataset(report: EvaluationReport) -> Any:
    """The benchmark as an MLflow dataset entity (name, digest, source, profile), logged as
    the run's input so that MLflow's runs table shows which benchmark each run evaluated."""
    import json

    from mlflow.entities import Dataset

    manifest = report.benchmark
    if manifest.homepage:
        source_type, source = "http", {"url": manifest.homepage}
    else:
        source_type, source = "code", {"tags": {"heta_eval.benchmark": manifest.key}}
    profile = {
        "benchmark": manifest.key,
        "task_type": manifest.task_type,
        "build_scope": manifest.build_scope,
        "cases": len({(r.unit_id, r.case_id) for r in report.case_results}),
        "units": len(report.knowledge_base_manifests),
    }
    return Dataset(
        name=manifest.name,
        digest=benchmark_digest(report),
        source_type=source_type,
        source=json.dumps(source),
        profile=json.dumps(profile),
    )
