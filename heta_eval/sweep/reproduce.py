"""The reproduction matrix: every published reference of the suites, run where its data is
present, our number beside the published one (2CR-style), checked against its tolerance.

References sharing a setup (suite, member, recipe, overrides) share one run. A reference
restricted to some documents is our mean over those documents' cases. Data is found under
one directory (`--data-root`): a suite's `data_dir` below it (`uda`, `beir`), and for suites
whose members are folders (`beir_local`) the member's folder; rows whose data is absent are
listed as not run, with the path that was looked for.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from omegaconf import OmegaConf

from heta_eval.config import config_dir
from heta_eval.records import EvaluationReport
from heta_eval.records.suite import SuiteDefinition, SuiteReference, suite_from_config
from heta_eval.results.suite_table import scoped_mean
from heta_eval.run.lifecycle import evaluate as run

log = logging.getLogger(__name__)

# How a suite's data directory reaches its runs: the override each suite's data needs.
DATA_OVERRIDE = {"benchmark.dataset": "suite.data_root"}  # member folders under a root
DEFAULT_DATA_OVERRIDE = "benchmark.data_root"


@dataclass
class MatrixRow:
    """One reference: what was published, what we got (None when not run) and why not."""

    suite: str
    reference: SuiteReference
    ours: float | None = None
    cases: int | None = None
    not_run: str | None = None
    seconds: float | None = None
    run_dir: str | None = None

    @property
    def delta(self) -> float | None:
        return None if self.ours is None else self.ours - self.reference.value

    @property
    def ok(self) -> bool | None:
        """True within tolerance, False a miss, None not checked or not run."""
        if self.ours is None or not self.reference.checked:
            return None
        return self.reference.within(self.ours)


@dataclass
class Setup:
    """One run shared by the references with the same suite, member, recipe and overrides."""

    suite: SuiteDefinition
    member: str
    recipe: str
    overrides: tuple[str, ...]
    rows: list[MatrixRow] = field(default_factory=list)


def suite_names() -> list[str]:
    """The suites of `conf/suite/`, by name."""
    return sorted(p.stem for p in (config_dir() / "suite").glob("*.yaml"))


def read_suite(name: str) -> SuiteDefinition:
    """A suite's definition as written in `conf/suite/<name>.yaml` (members computed from
    data, as `beir_local`'s, are left out)."""
    path = config_dir() / "suite" / f"{name}.yaml"
    if not path.is_file():
        raise ValueError(f"no suite {name!r} (suites: {', '.join(suite_names())})")
    node = OmegaConf.load(path).get("suite")
    if node is None:
        raise ValueError(f"{path}: no `suite` key")
    raw = OmegaConf.to_container(node, resolve=False)
    assert isinstance(raw, dict)
    if isinstance(raw.get("members"), str):  # an interpolation: found in the data
        raw["members"] = []
    raw = {k: (None if isinstance(v, str) and v.startswith("${") else v) for k, v in raw.items()}
    raw = {k: (None if v == "???" else v) for k, v in raw.items()}
    return suite_from_config(raw, where=f"{path}: suite")


def setups(
    suites: Sequence[SuiteDefinition], quick: bool, members: Sequence[str] = ()
) -> list[Setup]:
    """The runs the matrix needs, each with its references (`quick`: the quick ones only)."""
    found: dict[tuple[str, str, str, tuple[str, ...]], Setup] = {}
    for suite in suites:
        for ref in suite.references:
            if (quick and not ref.quick) or (members and ref.member not in members):
                continue
            key = (suite.name, ref.member, ref.recipe, ref.overrides)
            setup = found.setdefault(key, Setup(suite, ref.member, ref.recipe, ref.overrides))
            setup.rows.append(MatrixRow(suite=suite.name, reference=ref))
    return list(found.values())


def data_location(setup: Setup, data_root: Path | None) -> tuple[list[str], str | None]:
    """The overrides that point the run at its data, or why it cannot run."""
    suite = setup.suite
    if not suite.data_dir:
        return [], None
    if data_root is None:
        return [], "no --data-root given"
    base = data_root / suite.data_dir
    key = DATA_OVERRIDE.get(suite.member_key, DEFAULT_DATA_OVERRIDE)
    needed = base / setup.member if key == "suite.data_root" else base
    if not needed.is_dir():
        return [], f"data not found: {needed}"
    return [f"{key}={base}"], None


def run_overrides(setup: Setup, data: Sequence[str], out: Path) -> list[str]:
    """The `heta-eval` overrides of one setup's run (untracked, under `out`)."""
    return [
        f"suite={setup.suite.name}",
        f"{setup.suite.member_key}={setup.member}",
        f"recipe={setup.recipe}",
        *setup.overrides,
        *data,
        "tracking=none",
        f"paths.root={out}",
        f"runner.output_dir={out / 'runs' / setup.suite.name / setup.member / setup.recipe}",
        "runner.progress=off",
    ]


def ours(report: EvaluationReport, ref: SuiteReference) -> tuple[float | None, int]:
    """Our number for a reference from a report: the metric's mean (mode-free: the primary
    mode), over the referenced documents' cases when it names some."""
    return scoped_mean(report, ref.metric, ref.scope_units)


def run_matrix(
    suites: Sequence[SuiteDefinition],
    data_root: Path | None,
    out: Path,
    quick: bool = False,
    members: Sequence[str] = (),
    evaluate: Callable[[list[str]], EvaluationReport] | None = None,
) -> list[MatrixRow]:
    """Run every setup whose data is present and fill its rows; the others say why not."""
    import time

    if evaluate is None:

        def evaluate(overrides: list[str]) -> EvaluationReport:
            return run(overrides=overrides)

    rows: list[MatrixRow] = []
    for setup in setups(suites, quick, members):
        rows += setup.rows
        data, why = data_location(setup, data_root)
        if why is not None:
            for row in setup.rows:
                row.not_run = why
            continue
        overrides = run_overrides(setup, data, out)
        log.info("reproduce: %s", " ".join(overrides))
        started = time.perf_counter()
        try:
            report = evaluate(overrides)
        except Exception as exc:  # one failing setup does not stop the matrix
            for row in setup.rows:
                row.not_run = f"run failed: {type(exc).__name__}: {exc}"
            continue
        elapsed = time.perf_counter() - started
        for row in setup.rows:
            row.ours, row.cases = ours(report, row.reference)
            row.seconds = elapsed
            row.run_dir = str(report.run.output_dir) if report.run.output_dir else None
            if row.ours is None:
                row.not_run = no_value_reason(report, row.reference)
    return rows


def no_value_reason(report: EvaluationReport, ref: SuiteReference) -> str:
    """Why a report has no value for a reference: the metric was skipped on every case
    (with the skip reason, e.g. a top k that holds the whole knowledge base), or absent."""
    mode, _, name = ref.metric.rpartition(".")
    if not mode or mode not in report.query_modes:
        mode, name = report.primary_query_mode or "", ref.metric
    reasons = sorted(
        {
            score.skipped_reason
            for r in report.case_results
            if r.query_mode == mode and (not ref.scope_units or r.unit_id in ref.scope_units)
            for score in r.scores
            if score.name == name and score.value is None and score.skipped_reason
        }
    )
    if reasons:
        return f"{ref.metric} skipped on every case: {'; '.join(reasons)}"
    return f"no value of {ref.metric} in the report"
