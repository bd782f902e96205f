"""The object store's writer process under a file size limit: a full disk is reported as one,
naming the file, and what was written before stays."""

from __future__ import annotations

import errno
import subprocess
import sys
from pathlib import Path

import pytest


# A file size limit needs a process of its own: set here, it would limit pytest's writes too.
@pytest.mark.slow
def test_a_full_disk_in_the_writer_is_reported_as_one(tmp_path: Path) -> None:
    # RLIMIT_FSIZE is inherited by the writer process; SIGXFSZ ignored makes writes EFBIG.
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))\n"
        "from heta_eval.kb.store_writer import BackgroundStoreWriter\n"
        "with BackgroundStoreWriter(sys.argv[1]) as writer:\n"
        "    writer.put('raw/small/small.txt', b'x' * 10)\n"
        "    writer.put('raw/big/big.txt', b'x' * 5000)\n"
        "    try:\n"
        "        writer.finish()\n"
        "    except OSError as exc:\n"
        "        print(exc.errno, exc.strerror, exc.filename, sep='|')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    code, reason, filename = done.stdout.strip().split("|")
    assert int(code) == errno.EFBIG and reason == "File too large"
    assert filename == str(tmp_path / "raw" / "big" / "big.txt")
    assert (tmp_path / "raw" / "small" / "small.txt").read_bytes() == b"x" * 10
