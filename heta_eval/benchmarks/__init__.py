"""Benchmark adapters: they yield documents, cases and run units, and never build KBs."""

from heta_eval.benchmarks.beir import BeirBenchmark
from heta_eval.benchmarks.jsonl import JsonlBenchmark
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
from heta_eval.benchmarks.multihop_rag import MultiHopRagBenchmark
from heta_eval.benchmarks.sample import SampleBenchmark
from heta_eval.benchmarks.uda import UdaBenchmark

__all__ = [
    "BeirBenchmark",
    "BenchmarkDataError",
    "JsonlBenchmark",
    "MultiHopRagBenchmark",
    "SampleBenchmark",
    "UdaBenchmark",
]
