"""Worker threads: take a reserved task from the buffer, run it, hand the outcome to the writer."""

import logging
import threading
from collections.abc import Callable

from ..broker import Start
from ..records import now_ms
from .ack_writer import AckWriter
from .buffer import TaskBuffer
from .executor import Executor
from .leases import HeldLeases

logger = logging.getLogger(__name__)


class WorkerThread(threading.Thread):
    """Run tasks until the buffer closes. Task errors never end this thread (DESIGN.md §4)."""

    def __init__(
        self,
        index: int,
        *,
        buffer: TaskBuffer,
        executor: Executor,
        writer: AckWriter,
        held: HeldLeases,
        sync_ack: bool,
        on_crash: Callable[[], None],
    ) -> None:
        super().__init__(name=f"threadmill-worker-{index}")
        self.buffer = buffer
        self.executor = executor
        self.writer = writer
        self.held = held
        self.sync_ack = sync_ack
        self.on_crash = on_crash

    def run(self) -> None:
        try:
            while (reservation := self.buffer.take()) is not None:
                try:
                    if not self.held.holds(reservation.lease.task_id):
                        logger.warning(
                            "Skipped task whose reservation was lost task_id=%s",
                            reservation.lease.task_id,
                        )
                        continue
                    started_ms = now_ms()
                    self.writer.submit_start(Start(lease=reservation.lease, started_ms=started_ms))
                    finish = self.executor.run(reservation, started_ms)
                    self.writer.submit_finish(finish, wait=self.sync_ack)
                finally:
                    self.buffer.done()
        except Exception:
            logger.critical("Worker thread died name=%s", self.name, exc_info=True)
            self.on_crash()
        finally:
            self.executor.close()
