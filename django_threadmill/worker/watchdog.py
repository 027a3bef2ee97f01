"""The watchdog: records tasks that outlive --task-timeout as FAILED and replaces their thread."""

import logging
from collections.abc import Callable

from ..exceptions import TaskTimeout
from .ack_writer import AckWriter
from .buffer import TaskBuffer
from .outcome import failed
from .role import RoleThread
from .threads import WorkerThread

logger = logging.getLogger(__name__)

MAX_CHECK_INTERVAL_S = 1.0  # how often running tasks are checked, at most


class Watchdog(RoleThread):
    """Check running tasks against the timeout; a stuck one is failed and its thread replaced.

    Python cannot stop a thread, so the stuck thread is abandoned: it keeps running until its
    task returns, and its outcome is discarded (the attempt already ended as FAILED).
    """

    def __init__(
        self,
        timeout_s: float,
        threads: list[WorkerThread],
        replace: Callable[[], None],
        writer: AckWriter,
        buffer: TaskBuffer,
        on_crash: Callable[[], None],
    ) -> None:
        super().__init__("threadmill-watchdog", on_crash)
        self.timeout_s = timeout_s
        self.threads = threads
        self.replace = replace
        self.writer = writer
        self.buffer = buffer

    def loop(self) -> None:
        interval_s = min(MAX_CHECK_INTERVAL_S, self.timeout_s / 4)
        while not self.stopping.wait(interval_s):
            for thread in list(self.threads):
                overdue = thread.abandon_if_overdue(self.timeout_s)
                if overdue is None:
                    continue
                reservation, started_ms = overdue
                task_id = reservation.lease.task_id
                logger.error(
                    "Task timed out task_id=%s timeout_s=%s thread=%s (abandoned, replaced)",
                    task_id,
                    self.timeout_s,
                    thread.name,
                )
                error = TaskTimeout(
                    f"Task {task_id} ran longer than --task-timeout={self.timeout_s}s; the "
                    "worker stopped waiting for it. Make it faster or raise the timeout."
                )
                # The thread holds the TaskResult, so no policy is asked and no signal sent.
                self.writer.submit_finish(failed(reservation.lease, error, started_ms, None))
                self.buffer.done()
                self.replace()
