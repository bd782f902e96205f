"""A log file that cannot be written (full disk, file size limit) is said once, not per record.

`logging` reports a handler's failure by printing `--- Logging error ---` and a traceback for
every record that follows; on a full disk that buries the one line that says what happened.
`quiet_failing_log_files()` makes each file handler of the root logger, on its first failed
write, print one line naming the file and stop writing to it (the console keeps logging).
"""

from __future__ import annotations

import contextlib
import logging
import sys
from types import MethodType


def _give_up(handler: logging.FileHandler, record: logging.LogRecord) -> None:
    error = sys.exc_info()[1]
    if not isinstance(error, OSError):
        logging.FileHandler.handleError(handler, record)  # a bug, not the disk: as logging does
        return
    logging.getLogger().removeHandler(handler)
    with contextlib.suppress(Exception):
        handler.close()
    with contextlib.suppress(OSError, ValueError):
        print(
            f"heta-eval: cannot write the log file {handler.baseFilename}: "
            f"{error.strerror or error}; it stops here (the run goes on)",
            file=sys.stderr,
        )


def quiet_failing_log_files() -> None:
    """Give each file handler of the root logger the one-line failure above."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            handler.handleError = MethodType(_give_up, handler)  # type: ignore[method-assign]
