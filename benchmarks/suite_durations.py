"""The test suite's time per module and per test, from a pytest JUnit XML report.

    .venv/bin/python -m pytest --junitxml=/tmp/suite.xml
    python benchmarks/suite_durations.py /tmp/suite.xml [--top 40] [--modules 40]

Prints each module's total (setup, call and teardown of its tests: a module fixture counts in
the test that first uses it), longest first, then the longest tests; with each, its CPU
seconds where the report has them (a `cpu_seconds` property).
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def module_of(classname: str) -> str:
    """`tests.reliability.test_x.TestY` -> `tests/reliability/test_x.py`."""
    parts = classname.split(".")
    while parts and not parts[-1].startswith("test_"):
        parts.pop()
    return "/".join(parts) + ".py"


def prop_of(case: ET.Element, name: str) -> str:
    """A property of the test case (tests/cpu_time.py adds them), "" if it has none."""
    for prop in case.iter("property"):
        if prop.get("name") == name:
            return prop.get("value", "")
    return ""


def read(report: Path) -> list[tuple[str, str, float, bool, float]]:
    """(module, test name, seconds, skipped, CPU seconds) for every test case of the report."""
    cases = []
    for case in ET.parse(report).getroot().iter("testcase"):
        skipped = case.find("skipped") is not None
        module, name = module_of(case.get("classname", "")), case.get("name", "")
        cpu = float(prop_of(case, "cpu_seconds") or 0)
        cases.append((module, name, float(case.get("time", 0)), skipped, cpu))
    return cases


def worker_ends(report: Path) -> None:
    """When each xdist worker ran its last test, relative to the first worker's end, and the
    longest tests among each worker's last few: a long test handed out last shows here."""
    by_worker: dict[str, list[tuple[float, float, str]]] = defaultdict(list)
    for case in ET.parse(report).getroot().iter("testcase"):
        worker, ended = prop_of(case, "worker"), prop_of(case, "ended")
        if worker and ended:
            name = f"{module_of(case.get('classname', ''))}::{case.get('name', '')}"
            by_worker[worker].append((float(ended), float(case.get("time", 0)), name))
    if not by_worker:
        return
    first_end = min(max(t for t, _, _ in tests) for tests in by_worker.values())
    print("\nworkers' ends (seconds after the first worker finished; its last long tests):")
    for worker, tests in sorted(by_worker.items()):
        tests.sort()
        last = max(t for t, _, _ in tests) - first_end
        tail = [(s, n) for _, s, n in tests[-15:] if s >= 5]
        print(f"  {worker}: +{last:.0f} s, {len(tests)} tests")
        for seconds, name in tail:
            print(f"      {seconds:8.1f} s  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path)
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--modules", type=int, default=40)
    args = parser.parse_args()
    cases = read(args.report)
    per_module: dict[str, float] = defaultdict(float)
    cpu_module: dict[str, float] = defaultdict(float)
    for module, _, seconds, _, cpu in cases:
        per_module[module] += seconds
        cpu_module[module] += cpu
    total = sum(per_module.values())
    cpu_total = sum(cpu_module.values())
    print(
        f"{len(cases)} tests, {total:.0f} s in tests (summed over workers), {cpu_total:.0f} CPU s\n"
    )
    print("modules, longest first (wall s, CPU s):")
    for module, seconds in sorted(per_module.items(), key=lambda kv: -kv[1])[: args.modules]:
        print(f"  {seconds:8.1f} s  {cpu_module[module]:8.1f} cpu  {module}")
    print("\nlongest tests (wall s, CPU s):")
    for module, name, seconds, _, cpu in sorted(cases, key=lambda c: -c[2])[: args.top]:
        print(f"  {seconds:8.1f} s  {cpu:8.1f} cpu  {module}::{name}")
    worker_ends(args.report)


if __name__ == "__main__":
    main()
