"""What MLflow itself records about a run and its experiment, for the runs heta_eval creates
with `MlflowClient.create_run` (which, unlike `mlflow.start_run`, adds nothing by itself).

`context_tags` resolves the tags `mlflow.start_run` would set through MLflow's run-context
registry (`mlflow.user`, `mlflow.source.name`, `mlflow.source.type`, the git commit, branch
and repository when known); the UI's "Created by" and "Source" come from them.
`describe_experiment` gives the experiment a description (`mlflow.note.content`) naming the
benchmarks its runs evaluated.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any

from heta_eval.tracking.naming import source_name

log = logging.getLogger(__name__)

SOURCE_NAME_TAG = "mlflow.source.name"
REPO_URL_TAG = "mlflow.source.git.repoURL"
NOTE_TAG = "mlflow.note.content"
BENCHMARKS_TAG = "heta_eval.benchmarks"  # experiment tag: the benchmarks its runs evaluated
_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def without_credentials(url: str) -> str:
    """A repository URL without the user and token some remotes carry (`https://u:t@host`)."""
    return _USERINFO.sub("", url)


def context_tags(tags: Mapping[str, str]) -> dict[str, str]:
    """`tags` over what MLflow's run-context registry resolves for this process (the given
    tags win). `mlflow.source.name` is this process's main program unless `tags` name the one
    of the process the run belongs to (the tracker worker gets it from the run's process)."""
    from mlflow.tracking.context.registry import resolve_tags

    given = {SOURCE_NAME_TAG: source_name(), **tags}
    resolved = {str(k): str(v) for k, v in resolve_tags(given).items()}
    if REPO_URL_TAG in resolved:
        resolved[REPO_URL_TAG] = without_credentials(resolved[REPO_URL_TAG])
    return resolved


def experiment_note(benchmarks: list[str]) -> str:
    """The experiment description heta_eval writes (Markdown, shown above the runs table)."""
    named = ", ".join(f"`{b}`" for b in benchmarks)
    return (
        f"heta_eval evaluations of knowledge-base recipes on {named}. "
        "Each run is one recipe evaluated on one benchmark: mode-free metrics (`ndcg_at_10`) "
        "are the run's primary query mode (tag `heta_eval.primary_query_mode`), prefixed ones "
        "(`bm25.ndcg_at_10`) one mode; per-case results are the `case_results.json` table. "
        "A sweep is a parent run (`heta_eval.kind = sweep`) with `sweep_summary.json` (one "
        "row per job) and `sweep_best.json` (the best run of each score). Compare runs with "
        "`heta-eval-compare <run id>` (a sweep's parent id compares its jobs); list them with "
        "`heta-eval-runs`."
    )


def benchmark_of(tags: Mapping[str, str]) -> str | None:
    """`name/version/split` of the benchmark a run's tags name (None for a sweep parent)."""
    parts = [tags.get(f"benchmark.{k}") for k in ("name", "version", "split")]
    return "/".join(parts) if all(parts) else None  # type: ignore[arg-type]


def describe_experiment(client: Any, experiment_id: str, benchmark: str) -> None:
    """Add `benchmark` to the experiment's description. A description someone else wrote is
    kept (only the `heta_eval.benchmarks` tag grows); a failure is logged, never raised."""
    try:
        tags = dict(client.get_experiment(experiment_id).tags)
        known = [b for b in tags.get(BENCHMARKS_TAG, "").split(", ") if b]
        note = tags.get(NOTE_TAG)
        if benchmark in known and note:
            return
        ours = not note or note == experiment_note(known)
        known = sorted({*known, benchmark})
        client.set_experiment_tag(experiment_id, BENCHMARKS_TAG, ", ".join(known))
        if ours:
            client.set_experiment_tag(experiment_id, NOTE_TAG, experiment_note(known))
    except Exception as exc:  # a description is a convenience (e.g. no edit permission)
        log.warning("could not describe MLflow experiment %s: %s", experiment_id, exc)
