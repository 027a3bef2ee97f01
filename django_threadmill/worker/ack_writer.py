"""The ack writer: one thread per process that writes start notices and results in batches.

Worker threads hand over and move on (DESIGN.md §4). With no timer, the writer takes the first
item, drains whatever else is already waiting, and sends it: a burst collapses into one call,
a lone ack goes out at once. Starts are elided when the result is in the same batch, so a start
never follows its result; a batch of starts alone first waits 5 ms for their results, so fast
tasks never cost a start call. Transient Redis errors retry the same batch with capped backoff.
"""

import logging
import queue
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field

from ..broker import Broker, Finish, Outcome, Start
from ..exceptions import BrokerUnavailable
from .leases import HeldLeases
from .role import RoleThread

logger = logging.getLogger(__name__)

FIRST_BACKOFF_S = 0.05  # first wait after a failed write; doubles up to MAX_BACKOFF_S
MAX_BACKOFF_S = 5.0
START_NOTICE_DELAY_S = 0.005  # a batch of start notices alone waits this long for results
_STOP = object()  # sentinel: everything queued before it is written, then the thread ends


@dataclass(slots=True)
class _Submitted:
    item: Start | Finish
    written: threading.Event | None = field(default=None)  # set once written, for --sync-ack


class AckWriter(RoleThread):
    """Write start notices and outcomes for one worker process, in batches."""

    def __init__(
        self,
        broker: Broker,
        worker_id: str,
        held: HeldLeases,
        on_written: Callable[[], None],
        on_crash: Callable[[], None],
    ) -> None:
        super().__init__("threadmill-ack-writer", on_crash)
        self.broker = broker
        self.worker_id = worker_id
        self.held = held
        self.on_written = on_written  # called after each batch that recorded outcomes
        self.give_up = threading.Event()  # set past the shutdown deadline: stop retrying
        self._inbox: queue.SimpleQueue[_Submitted | object] = queue.SimpleQueue()
        self._unwritten = 0
        self._unwritten_lock = threading.Lock()

    def pending(self) -> int:
        """Return how many submitted items are not written (or given up) yet."""
        with self._unwritten_lock:
            return self._unwritten

    def _count(self, delta: int) -> None:
        with self._unwritten_lock:
            self._unwritten += delta

    def submit_start(self, start: Start) -> None:
        self._count(1)
        self._inbox.put(_Submitted(start))

    def submit_finish(self, finish: Finish, *, wait: bool = False) -> None:
        """Queue ``finish``; with ``wait`` (strict --sync-ack mode) return once it is written."""
        written = threading.Event() if wait else None
        self._count(1)
        self._inbox.put(_Submitted(finish, written))
        if written is not None:
            written.wait()

    def stop(self) -> None:
        """Ask the writer to flush everything queued so far, then end."""
        self._inbox.put(_STOP)

    def loop(self) -> None:
        stopping = False
        while not stopping:
            batch = [self._inbox.get()]
            self._drain_into(batch)
            if all(
                isinstance(entry, _Submitted) and isinstance(entry.item, Start) for entry in batch
            ):
                # A start notice matters only for a task that runs a while: give the result
                # START_NOTICE_DELAY_S to arrive, so a fast task never costs a start call.
                with suppress(queue.Empty):
                    batch.append(self._inbox.get(timeout=START_NOTICE_DELAY_S))
                    self._drain_into(batch)
            stopping = any(entry is _STOP for entry in batch)
            self._write([entry for entry in batch if isinstance(entry, _Submitted)])

    def _drain_into(self, batch: list[_Submitted | object]) -> None:
        """Append whatever is already waiting, without blocking."""
        while True:
            try:
                batch.append(self._inbox.get_nowait())
            except queue.Empty:
                return

    def _write(self, batch: list[_Submitted]) -> None:
        finishes = [entry.item for entry in batch if isinstance(entry.item, Finish)]
        finished_ids = {finish.lease.task_id for finish in finishes}
        starts = [
            entry.item
            for entry in batch
            if isinstance(entry.item, Start) and entry.item.lease.task_id not in finished_ids
        ]
        if starts:
            self._send("start", starts, self.broker.start)
        successes = [f for f in finishes if f.outcome is Outcome.SUCCESSFUL]
        if successes:
            self._send("finish", successes, self.broker.finish)
        for failure in (f for f in finishes if f.outcome is not Outcome.SUCCESSFUL):
            self._send("finish", [failure], self.broker.finish)
        if finishes:
            self.held.discard([finish.lease for finish in finishes])
            self.on_written()
        self._count(-len(batch))
        for entry in batch:
            if entry.written is not None:
                entry.written.set()

    def _send[T: (Start, Finish)](
        self, kind: str, items: Sequence[T], call: Callable[[str, Sequence[T]], list[T]]
    ) -> None:
        """Send one batch, retrying transient errors with capped backoff; log stale items."""
        backoff_s = FIRST_BACKOFF_S
        attempt = 1
        while True:
            try:
                stale = call(self.worker_id, items)
                break
            except BrokerUnavailable as exc:
                if self.give_up.is_set():
                    logger.error(
                        "Ack batch dropped at shutdown kind=%s size=%d error=%s (the reaper "
                        "will settle these tasks)",
                        kind,
                        len(items),
                        exc,
                    )
                    return
                logger.warning(
                    "Ack batch failed kind=%s size=%d attempt=%d error=%s",
                    kind,
                    len(items),
                    attempt,
                    exc,
                )
                self.give_up.wait(backoff_s)
                backoff_s = min(backoff_s * 2, MAX_BACKOFF_S)
                attempt += 1
        for item in stale:
            logger.error(
                "Ack rejected as stale kind=%s task_id=%s (the lease was reaped or the task "
                "settled elsewhere)",
                kind,
                item.lease.task_id,
            )
