"""Headless Chromium (Debian's package) for the tests that look at our HTML pages."""

from __future__ import annotations

import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")

# Without the background-networking flags Chromium's connections are refused by a closed
# network, many at a time; a new profile directory per call keeps runs independent.
HEADLESS_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def chromium(
    page: Path, profile: Path, *args: str, timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Open `page` in headless Chromium with a fresh `profile` directory and `args`
    (`--screenshot=PNG`, `--dump-dom`, `--window-size=W,H`, ...)."""
    return subprocess.run(
        [
            str(CHROMIUM),
            *HEADLESS_FLAGS,
            f"--user-data-dir={profile}",
            *args,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
