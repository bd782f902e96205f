"""Three failures that printed a full traceback (issue 36, item 14): a downloaded archive that
cannot be extracted, `hydra.run.dir` naming a file, and an interpolation (`${recipe.nam}`)
in a setting Hydra resolves itself. Each is now one line naming the cause, exit 2."""

from __future__ import annotations

import io
import uuid
import zipfile
from pathlib import Path

import pytest

from ..conftest import InProcessCli


def _archives(name: str) -> dict[str, bytes]:
    unsafe = io.BytesIO()
    with zipfile.ZipFile(unsafe, "w") as archive:
        archive.writestr("../escape.txt", "x")
    whole = io.BytesIO()
    with zipfile.ZipFile(whole, "w") as archive:
        archive.writestr(f"{name}/corpus.jsonl", "x" * 100_000)
    corrupt = bytearray(whole.getvalue())
    corrupt[200] ^= 0xFF  # inside the member's data: its CRC no longer matches
    return {
        "not an archive": b"\x00garbage" * 300,
        "cut off": whole.getvalue()[:-40],
        "corrupt": bytes(corrupt),
        "unsafe": unsafe.getvalue(),
    }


@pytest.mark.parametrize(
    ("kind", "cause"),
    [
        ("not an archive", "not a supported archive"),
        ("cut off", "not a supported archive"),
        ("corrupt", "a corrupt or cut-off archive (Bad CRC-32"),
        ("unsafe", "member '../escape.txt' has a '..' component"),
    ],
)
def test_a_bad_archive_is_one_line_exit_2(
    cli: InProcessCli, tmp_path: Path, kind: str, cause: str
) -> None:
    name = f"bad{uuid.uuid4().hex[:8]}"
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / f"{name}.zip").write_bytes(_archives(name)[kind])
    done = cli(
        "tracking=none",
        "benchmark=beir",
        f"benchmark.dataset={name}",
        f"benchmark.base_url={mirror.as_uri()}",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("heta-eval: ")]
    assert f"{name}.zip" in line and cause in line


@pytest.mark.parametrize("below", ["", "/sub"])
def test_a_run_directory_that_is_a_file_is_one_line_exit_2(
    cli: InProcessCli, tmp_path: Path, below: str
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file", encoding="utf-8")
    done = cli("tracking=none", f"hydra.run.dir={blocker}{below}")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert (
        f"cannot create the directory {blocker}{below}: "
        f"{'File exists' if not below else 'Not a directory'} (a file has that name or is on "
        "its path); choose another hydra.run.dir"
    ) in done.stderr
    assert blocker.read_text() == "a file"


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("hydra.run.dir=out/${recipe.nam}", "hydra.run.dir"),
        ("hydra.job.name=${recipe.nam}", "hydra.job_logging.handlers.file.filename"),
    ],
)
def test_an_interpolation_hydra_cannot_resolve_is_one_line_exit_2(
    cli: InProcessCli, override: str, key: str
) -> None:
    done = cli("tracking=none", override)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert f"{key}: Interpolation key 'recipe.nam' not found" in done.stderr
