"""Benchmark adapters: they yield documents, cases and run units, and never build KBs."""

from heta_eval.benchmarks.jsonl import JsonlBenchmark
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
from heta_eval.benchmarks.sample import SampleBenchmark

__all__ = ["BenchmarkDataError", "JsonlBenchmark", "SampleBenchmark"]
