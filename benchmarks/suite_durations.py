"""The test suite's time per module and per test, from a pytest JUnit XML report.

    .venv/bin/python -m pytest --junitxml=/tmp/suite.xml
    python benchmarks/suite_durations.py /tmp/suite.xml [--top 40] [--modules 40]

Prints each module's total (setup, call and teardown of its tests: a module fixture counts in
the test that first uses it), longest first, as the HEAVIEST tuple of tests/schedule.py
wants them, then the longest tests; with each, its CPU seconds (the worker's and the processes
it waited for, from tests/cpu_time.py) where the report has them.
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


def cpu_of(case: ET.Element) -> float:
    """The test's `cpu_seconds` property (tests/cpu_time.py), 0 if the report has none."""
    for prop in case.iter("property"):
        if prop.get("name") == "cpu_seconds":
            return float(prop.get("value", 0))
    return 0.0


def read(report: Path) -> list[tuple[str, str, float, bool, float]]:
    """(module, test name, seconds, skipped, CPU seconds) for every test case of the report."""
    cases = []
    for case in ET.parse(report).getroot().iter("testcase"):
        skipped = case.find("skipped") is not None
        module, name = module_of(case.get("classname", "")), case.get("name", "")
        cases.append((module, name, float(case.get("time", 0)), skipped, cpu_of(case)))
    return cases


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


if __name__ == "__main__":
    main()
