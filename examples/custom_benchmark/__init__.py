"""A benchmark adapter over Markdown documents and a CSV of questions."""

from examples.custom_benchmark.benchmark import RiversBenchmark

__all__ = ["RiversBenchmark"]
