"""The bundled sample benchmark: small, offline, and shaped both ways."""

from __future__ import annotations

from importlib.resources import files
from typing import Literal

from heta_eval.benchmarks.jsonl import JsonlBenchmark

SAMPLE_DATA = files("heta_eval.benchmarks") / "sample_data"


class SampleBenchmark(JsonlBenchmark):
    """36 short documents in four topics with 48 questions, shipped inside the package.

    `shape="corpus"` builds one knowledge base for all questions; `shape="units"` builds one
    per topic, each queried with that topic's questions (the many-units shape of UDA).
    """

    def __init__(self, shape: Literal["corpus", "units"] = "corpus") -> None:
        if shape not in ("corpus", "units"):
            raise ValueError(f"shape must be 'corpus' or 'units', got {shape!r}")
        super().__init__(
            documents=str(SAMPLE_DATA / "documents.jsonl"),
            cases=str(SAMPLE_DATA / "cases.jsonl"),
            name="sample",
            version="1",
            split="test",
            task_type="qa",
            build_scope="corpus" if shape == "corpus" else "case",
            metadata={"shape": shape},
            slice_by=("difficulty", "question_type"),
        )
