"""The order in which xdist hands out the test modules: the longest first.

`--dist loadfile` keeps each module on one worker and hands the modules out in collection
order (`--no-loadscope-reorder`; xdist's own reordering puts modules with many tests first,
which sent the few-test, minute-long server and sweep modules to the end, where one worker ran
them alone). Longest first, the two workers finish together: the short modules fill the gaps.

HEAVIEST lists the modules that take the longest, longest first (measured on the whole
suite: `pytest --junitxml=suite.xml`, then `python benchmarks/suite_durations.py suite.xml`
prints them in this order; the tuple below is the mean of two such runs, 2026-12-03, since
one run on a loaded machine can be off by half for a module; test_team_auth from a run of that
module alone after its server began to remember logins); every other module follows, in
collection order. A missing or renamed module here only costs time, never a test.
"""

from __future__ import annotations

import pytest

HEAVIEST = (
    "tests/test_suites.py",
    "tests/integration/docs/test_doc_blocks.py",
    "tests/test_ray.py",
    "tests/test_sweeps.py",
    "tests/test_mlflow_views.py",
    "tests/test_heta_bridge.py",
    "tests/test_dense.py",
    "tests/reliability/test_tracking_outage.py",
    "tests/test_shards.py",
    "tests/integration/run/test_tuning.py",
    "tests/reliability/test_run_identity.py",
    "tests/test_mlflow_ui_screens.py",
    "tests/reliability/test_concurrency.py",
    "tests/test_team_tracking.py",
    "tests/reliability/test_kill_resume.py",
    "tests/integration/compare/test_real_runs.py",
    "tests/reliability/test_bad_data.py",
    "tests/integration/kb/test_replay.py",
    "tests/test_ui_views.py",
    "tests/test_tracking_service.py",
    "tests/test_resume.py",
    "tests/reliability/test_team_auth.py",
    "tests/test_sweep_workers.py",
    "tests/reliability/test_checked_up_front.py",
    "tests/reliability/test_bad_config.py",
    "tests/test_uda_subsets.py",
    "tests/integration/cli/test_hydra_flags.py",
    "tests/integration/cli/test_main.py",
    "tests/integration/kb/test_llm_answers.py",
    "tests/integration/cli/test_console.py",
    "tests/test_uda.py",
    "tests/reliability/test_signals.py",
    "tests/reliability/test_fresh_store.py",
    "tests/reliability/test_wrong_numbers.py",
    "tests/test_sweep_loads.py",
    "tests/reliability/test_readers_give_up.py",
)
RANK = {module: rank for rank, module in enumerate(HEAVIEST)}


def heavy_first(items: list[pytest.Item]) -> None:
    """Reorder `items` in place: the HEAVIEST modules first, in that order, each module's
    tests together and in their own order; the other modules after, as collected."""
    position = {}
    for index, item in enumerate(items):
        module = item.nodeid.split("::", 1)[0]
        position.setdefault(module, (RANK.get(module, len(RANK)), index))
    items.sort(key=lambda item: position[item.nodeid.split("::", 1)[0]])
