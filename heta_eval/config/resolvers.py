"""OmegaConf resolvers the suites use (registered once, on import):

- `${heta_join:${suite.members}}`: a list as the comma-separated values of a sweep override
  (the suite's `hydra.sweeper.params`);
- `${heta_beir_datasets:DIR}`: the BEIR datasets found under DIR, one folder each holding
  corpus.jsonl, queries.jsonl and qrels/ (`suite=beir_local`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import OmegaConf


class SuiteDataError(ValueError):
    """A suite's data root holds none of its members."""


def join(values: Any) -> str:
    """`[fin, tat]` as `fin,tat` (a sweep over the values)."""
    items = list(values) if not isinstance(values, str) else [values]
    return ",".join(str(v) for v in items)


def beir_datasets(root: Any) -> list[str]:
    """The names of the BEIR dataset folders under `root`, sorted."""
    if root in (None, "", "???"):
        raise SuiteDataError(
            "suite.data_root: required by this suite: the directory holding one folder per "
            "BEIR dataset (corpus.jsonl, queries.jsonl, qrels/), e.g. suite.data_root=data/beir"
        )
    base = Path(str(root)).expanduser()
    if not base.is_dir():
        raise SuiteDataError(f"suite.data_root: {base} is not a directory")
    found = sorted(
        p.name
        for p in base.iterdir()
        if p.is_dir()
        and (p / "corpus.jsonl").is_file()
        and (p / "queries.jsonl").is_file()
        and (p / "qrels").is_dir()
    )
    if not found:
        raise SuiteDataError(
            f"suite.data_root: no BEIR dataset under {base} (a folder with corpus.jsonl, "
            "queries.jsonl and qrels/)"
        )
    return found


def register() -> None:
    """Register the resolvers (idempotent)."""
    for name, fn in (("heta_join", join), ("heta_beir_datasets", beir_datasets)):
        if not OmegaConf.has_resolver(name):
            OmegaConf.register_new_resolver(name, fn)


register()
