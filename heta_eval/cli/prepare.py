"""`heta-eval-prepare`: download and verify benchmark data without evaluating anything."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from heta_eval.async_run import run_sync
from heta_eval.benchmarks.archives import ArchiveError
from heta_eval.benchmarks.download import DownloadError
from heta_eval.benchmarks.jsonl_files import BenchmarkDataError
from heta_eval.config import config_dir
from heta_eval.config.resolve import ConfigError
from heta_eval.records import BenchmarkWorkspace
from heta_eval.run.assembly import create_component


def _compose(overrides: list[str]) -> Any:
    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig

    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
    cfg.hydra.runtime.cwd = str(Path.cwd())
    HydraConfig.instance().set_config(cfg)
    return cfg


def _benchmark_options() -> list[str]:

    return sorted(p.stem for p in (config_dir() / "benchmark").glob("*.yaml"))


def _print_resources(console: Console, rows: list[tuple[str, Any]]) -> None:
    for option, resource in rows:
        size = f", {resource.size_bytes:,} bytes" if resource.size_bytes else ""
        digest = f"sha256 {resource.sha256}" if resource.sha256 else "no published checksum"
        console.print(f"{option}: {resource.name} ({digest}{size})", soft_wrap=True)
        console.print(f"    {resource.uri}", soft_wrap=True)
        if resource.description:
            console.print(f"    {resource.description}", soft_wrap=True)


def list_resources(console: Console) -> int:
    """Print what every configured benchmark needs to download."""
    rows = []
    for option in _benchmark_options():
        cfg = _compose([f"benchmark={option}"])
        from omegaconf import OmegaConf

        spec = OmegaConf.to_container(cfg.benchmark, resolve=True)
        if any(v == "???" for v in spec.values()):  # type: ignore[union-attr]
            console.print(f"{option}: your own files (benchmark.documents, benchmark.cases)")
            continue
        benchmark = create_component("benchmark", spec)
        resources = benchmark.resources()
        if not resources:
            console.print(f"{option}: nothing to download (data ships with heta_eval or is yours)")
        rows.extend((option, r) for r in resources)
    _print_resources(console, rows)
    return 0


def prepare(overrides: list[str], console: Console) -> int:
    """Prepare the benchmark the overrides select: download, extract and verify its files."""
    from omegaconf import OmegaConf

    cfg = _compose(overrides)
    spec = OmegaConf.to_container(cfg.benchmark, resolve=True)
    benchmark = create_component("benchmark", spec)
    resources = benchmark.resources()
    _print_resources(console, [(benchmark.manifest.name, r) for r in resources])
    workspace = BenchmarkWorkspace(
        root=Path(str(OmegaConf.select(cfg, "runner.workspace_dir", default="outputs/data"))),
        offline=bool(OmegaConf.select(cfg, "runner.offline", default=False)),
    )
    prepared = run_sync(benchmark.prepare(workspace))
    console.print(f"prepared {benchmark.manifest.key} in {prepared.root}")
    for name, path in prepared.paths.items():
        console.print(f"  {name}: {path}")
    return 0


def main(argv: list[str] | None = None) -> None:
    """Entry point of `heta-eval-prepare`."""
    parser = argparse.ArgumentParser(
        prog="heta-eval-prepare",
        description="Download and verify a benchmark's data (same overrides as heta-eval), "
        "or list what every benchmark needs.",
    )
    parser.add_argument("--list", action="store_true", help="list every benchmark's resources")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. benchmark=beir")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    console = Console()
    try:
        code = list_resources(console) if args.list else prepare(args.overrides, console)
    except (ConfigError, ArchiveError, BenchmarkDataError, DownloadError, OSError) as exc:
        print(f"heta-eval-prepare: {exc}", file=sys.stderr)
        code = 1
    sys.exit(code)


if __name__ == "__main__":
    main()
