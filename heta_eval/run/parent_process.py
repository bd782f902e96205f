"""A sweep's MLflow parent run, opened and closed in the tracker worker.

The launching process of a sweep would otherwise import MLflow and open its store itself
(about two seconds before the first job, on the sweep's critical path) for the parent run
and again for the summary at the end. `ParentProcess` sends both to a tracker worker
(`tracking.sweep_parent.sweep_call`): with the basic launcher the sweep's shared one (the
jobs' runs are logged there too, so the summary is read after every job's `finish`), else
the worker `heta-eval` started early. What the summary prints comes back and is printed
here. `ParentHere` does the same in this process, when no worker can be had.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from heta_eval.config.secrets import scrub, secret_values
from heta_eval.run import sweep_workers, tracker_worker
from heta_eval.run.tracker_process import CALL_TIMEOUT, spawn_link
from heta_eval.run.worker_link import WorkerGone, WorkerLink
from heta_eval.tracking.sweep_ids import PARENT_RUN_FILE
from heta_eval.tracking.sweep_parent import (
    ParentNotCreated,
    close_parent,
    open_parent,
    warn_not_created,
)

log = logging.getLogger(__name__)

KEY = tracker_worker.SWEEP_KEY  # the parent's tracker in the worker


class ParentHere:
    """The parent run's calls made in this process (MLflow imported here)."""

    def __init__(self, tracker: Any) -> None:
        self.tracker = tracker
        self.run_id: str | None = None

    def open(
        self, sweep_dir: Path, sid: str, params: dict[str, str], tags: dict[str, str], name: str
    ) -> None:
        """Create or resume the parent run (`open_parent`); raises when it cannot."""
        self.run_id = open_parent(self.tracker, sweep_dir, sid, params, tags, name)

    def close(self, sweep_dir: Path, optimized: str | None, suite: Any, **how: Any) -> None:
        """Summarise the sweep into the parent and end it (`close_parent`)."""
        close_parent(self.tracker, sweep_dir, optimized, suite, **how)


class ParentProcess:
    """The parent run's calls made by a tracker worker; see the module docstring."""

    def __init__(self, tracker: Any, spec: Mapping[str, Any], shared: bool) -> None:
        self.tracker = tracker  # for its uri, root and experiment (no MLflow imported)
        self.run_id: str | None = None
        self._spec = {**spec, "root": str(tracker.root), "uri": tracker.uri}
        self._secrets = secret_values(spec)
        self._shared = shared
        self._link: WorkerLink | None = None
        self._opening: Future[str | None] | None = None  # opened without waiting

    def open(
        self,
        sweep_dir: Path,
        sid: str,
        params: dict[str, str],
        tags: dict[str, str],
        name: str,
        wait: bool = True,
    ) -> None:
        """Create or resume the parent run in the worker; raises `ParentNotCreated` when it
        cannot, `WorkerGone` when the worker cannot do it (then `ParentHere` can). Without
        `wait`, returns at once: the id is written to the sweep directory (and given to
        `sweep_workers.opening_parent`) when it comes, a failure is logged then."""
        self._link = sweep_workers.tracker_link(spawn_link) if self._shared else spawn_link()
        self._link.secrets |= self._secrets
        level = min(logging.getLogger().getEffectiveLevel(), log.getEffectiveLevel())
        init = self._send({"op": "init", "spec": self._spec, "log_level": level})
        call = {"sweep_dir": str(sweep_dir), "sid": sid, "params": params, "tags": tags}
        start = self._send({"op": "sweep_start", **call, "run_name": name})
        if wait:
            self.run_id = self._opened(init, start)
            return
        opened: Future[str | None] = Future()
        self._opening = opened
        sweep_workers.opening_parent(opened)

        def done(_: Future[dict[str, Any]]) -> None:
            try:
                run_id = self._opened(init, start)
            except Exception as exc:
                warn_not_created(sweep_dir, self.tracker.root, getattr(exc, "refused", None), exc)
                opened.set_result(None)
                return
            self.run_id = run_id
            with contextlib.suppress(OSError):  # read by `on_job_end` and by `heta-eval-runs`
                (sweep_dir / PARENT_RUN_FILE).write_text(run_id, encoding="utf-8")
            opened.set_result(run_id)

        start.add_done_callback(done)

    def _opened(self, init: Future[dict[str, Any]], start: Future[dict[str, Any]]) -> str:
        """The parent's id from the answers to `init` and `sweep_start`."""
        self._value(init, "init")
        value = self._value(start, "sweep_start")
        if isinstance(value, dict):
            failed = scrub(str(value.get("failed")), self._secrets)
            raise ParentNotCreated(failed, value.get("refused"))
        return str(value)

    def close(self, sweep_dir: Path, optimized: str | None, suite: Any, **how: Any) -> None:
        """Summarise the sweep into the parent and end it, in the worker; print what the
        summary printed. A worker that is gone leaves it to `ParentHere`."""
        from rich.console import Console

        if self._opening is not None and self._opening.result(timeout=CALL_TIMEOUT) is None:
            return  # never created (said when it failed)
        call = {
            "op": "sweep_end",
            "run_id": self.run_id,
            "sweep_dir": str(sweep_dir),
            "optimized": optimized,
            "suite": suite.model_dump(mode="json") if suite is not None else None,
            "columns": Console().width,
            **how,
        }
        try:
            printed = self._ask(call)
        except WorkerGone as gone:
            log.warning("the MLflow tracking worker %s; the sweep is summarised here", gone)
            here = ParentHere(self.tracker)
            self.tracker.run_id = self.run_id
            here.close(sweep_dir, optimized, suite, **how)
            return
        finally:
            if not self._shared and self._link is not None:
                self._link.close(CALL_TIMEOUT)
        print(str(printed or ""), end="", flush=True)

    def _send(self, message: dict[str, Any]) -> Future[dict[str, Any]]:
        if self._link is None:
            raise WorkerGone("is not running")
        return self._link.send({**message, "tracker": KEY})

    def _ask(self, message: dict[str, Any]) -> Any:
        return self._value(self._send(message), str(message["op"]))

    def _value(self, future: Future[dict[str, Any]], op: str) -> Any:
        try:
            answer = future.result(timeout=CALL_TIMEOUT)
        except TimeoutError:
            raise WorkerGone(f"did not answer {op!r}") from None
        if "error" in answer:
            error = scrub(str(answer["error"]), self._secrets)
            if op == "init":
                raise WorkerGone(f"could not create the tracker ({error})")
            raise RuntimeError(f"MLflow tracking ({op}) failed: {error}")
        return answer.get("value")
