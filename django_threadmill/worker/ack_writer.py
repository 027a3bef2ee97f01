"""The ack writer: one thread per process that writes start notices and results in batches.

Worker threads hand over and move on (DESIGN.md §4). With no timer, the writer takes the first
item, drains whatever else is already waiting, and sends it: a burst collapses into one call,
a lone ack goes out at once. A start notice is held for 20 ms first: if its result arrives meanwhile
the notice is dropped, so fast tasks never cost a start call, and a start never follows its
result. Transient Redis errors retry the same batch with capped backoff.
"""

import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..broker import Broker, Finish, Lease, Outcome, Start
from ..exceptions import BrokerUnavailable
from .leases import HeldLeases
from .role import RoleThread

logger = logging.getLogger(__name__)

FIRST_BACKOFF_S = 0.05  # first wait after a failed write; doubles up to MAX_BACKOFF_S
MAX_BACKOFF_S = 5.0
# A start notice is held this long, as its result may make it moot. 5 ms was too short with
# four threads: a thread waiting for the GIL (5 ms switch interval) let most notices go out.
START_NOTICE_DELAY_S = 0.02
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
        held_starts: dict[Lease, tuple[Start, float]] = {}  # notice and when it was taken
        stopping = False
        while not stopping:
            batch = self._next_batch(held_starts)
            stopping = any(entry is _STOP for entry in batch)
            submitted = [entry for entry in batch if isinstance(entry, _Submitted)]
            self._write(submitted, held_starts, flush=stopping)

    def _next_batch(self, held_starts: dict[Lease, tuple[Start, float]]) -> list[object]:
        """Block for the first item, or until the oldest held start is due; then drain."""
        timeout_s = None
        if held_starts:
            oldest = min(taken for _, taken in held_starts.values())
            timeout_s = max(0.0, oldest + START_NOTICE_DELAY_S - time.monotonic())
        try:
            batch = [self._inbox.get(timeout=timeout_s)]
        except queue.Empty:
            return []
        while True:
            try:
                batch.append(self._inbox.get_nowait())
            except queue.Empty:
                return batch

    def _write(
        self,
        batch: list[_Submitted],
        held_starts: dict[Lease, tuple[Start, float]],
        *,
        flush: bool,
    ) -> None:
        """Send due starts and every outcome; a start whose outcome came is dropped unsent."""
        now = time.monotonic()
        finishes = [entry.item for entry in batch if isinstance(entry.item, Finish)]
        for entry in batch:
            if isinstance(entry.item, Start):
                held_starts[entry.item.lease] = (entry.item, now)
        elided = sum(held_starts.pop(finish.lease, None) is not None for finish in finishes)
        due = [
            start
            for start, taken in held_starts.values()
            if flush or now - taken >= START_NOTICE_DELAY_S
        ]
        for start in due:
            del held_starts[start.lease]
        if due:
            self._send("start", due, self.broker.start)
        successes = [f for f in finishes if f.outcome is Outcome.SUCCESSFUL]
        if successes:
            self._send("finish", successes, self.broker.finish)
        for failure in (f for f in finishes if f.outcome is not Outcome.SUCCESSFUL):
            self._send("finish", [failure], self.broker.finish)
        if finishes:
            self.held.discard([finish.lease for finish in finishes])
            self.on_written()
        self._count(-(len(finishes) + len(due) + elided))
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
