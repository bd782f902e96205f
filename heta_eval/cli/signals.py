"""SIGTERM ends a run as Ctrl-C does.

Schedulers, `timeout` and `docker stop` send SIGTERM, whose default kills the process at once:
the tracking run would stay RUNNING and nothing would be said. `stop_on_sigterm()` turns it
into what SIGINT does: inside the run's event loop asyncio cancels the run (the lifecycle
ends the tracking run KILLED and closes the journal), outside it a KeyboardInterrupt is
raised. `exit_status()` is 128 + the signal that arrived (130 for SIGINT, 143 for SIGTERM).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

_received: list[int] = []


def stop_on_sigterm() -> None:
    """Handle SIGTERM like SIGINT (in the main thread; a no-op elsewhere)."""
    if threading.current_thread() is not threading.main_thread():
        return

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        _received.append(signum)
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # asyncio's (cancels the running task) or Python's default
            handler(signal.SIGINT, frame)
        else:
            raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_sigterm)


def exit_status() -> tuple[int, str]:
    """(exit status, signal name) of the interruption: SIGTERM if it came, else SIGINT."""
    signum = _received[0] if _received else signal.SIGINT
    return 128 + signum, signal.Signals(signum).name
