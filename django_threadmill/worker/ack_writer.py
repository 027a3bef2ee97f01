"""The ack writer: one thread per process that writes start notices and results in batches.

Worker threads hand over and move on (docs/worker.md, How the loop works). With no timer, the writer
takes what is waiting and sends it: a burst collapses into one call, a lone ack goes out at once. A
start notice is held for 20 ms first: if its result arrives meanwhile the notice is dropped, so fast
tasks never cost a start call, and a start never follows its result. What a write did not record
for a transient Redis error is tried again with capped backoff while the rest goes on (a Redis
Cluster primary down holds up its own queues' acks alone: worker/unwritten.py); a result Redis
refuses as too large ends its task FAILED, and the rest of its batch is written (worker/refused.py).
Redis refusing this worker's credentials or rights stops the process (``on_refused``), as no retry
helps: the batch is left to the reaper.

Hand-over waits for nobody and wakes nobody while the writer is busy: items go on a
deque, and the writer's doorbell rings only when it sleeps (an outcome's size is counted on a
deque too: worker/held_chars.py). Waking the writer once per item
handed the GIL to it once per task, so at four threads it sent ten times smaller batches.

Progress reports (worker/progress.py) ride along: the waiting ones go with the first finish
call made once they are due, or alone when none is; a finishing attempt's last report goes
with its outcome, written first.
"""

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import partial

from ..broker import Broker, Finish, Lease, ProgressReport, Rejected, Start
from ..broker.transitions import FINISH_CALL_CHARS
from ..exceptions import BrokerRefused, BrokerUnavailable, PartlyAcked
from .extras import Extras
from .held_chars import HeldChars
from .leases import HeldLeases
from .not_recorded import log_not_recorded, log_refused, task_ids
from .progress import PendingProgress
from .refused import finish_apart, may_carry_refused
from .role import RoleThread
from .unwritten import Unwritten

logger = logging.getLogger(__name__)

# A start notice is held this long, as its result may make it moot. 5 ms was too short with
# four threads: a thread waiting for the GIL (5 ms switch interval) let most notices go out.
START_NOTICE_DELAY_S = 0.02


@dataclass(frozen=True, slots=True)
class _Written:
    """A result whose submitter waits until it is written (strict --sync-ack mode)."""

    finish: Finish
    event: threading.Event


class StartNow(Enum):
    """What became of a start notice written before its run (``AckWriter.start_now``)."""

    RECORDED = "recorded"  # the attempt is running in Redis
    REFUSED = "refused"  # not recorded (the lease was lost): the task must not run here
    HELD = "held"  # Redis did not answer: held as any notice, the run goes ahead


class _Stop:
    """Sentinel: everything queued before it is written, then the thread ends."""


type _Item = Start | Finish | _Written | _Stop


class AckWriter(RoleThread):
    """Write start notices and outcomes for one worker process, in batches."""

    def __init__(
        self,
        broker: Broker,
        worker_id: str,
        held: HeldLeases,
        progress: PendingProgress,
        on_written: Callable[[], None],
        on_crash: Callable[[], None],
        *,
        on_refused: Callable[[BrokerRefused], None] = lambda error: None,
    ) -> None:
        super().__init__("threadmill-ack-writer", on_crash)
        self.broker = broker
        self.worker_id = worker_id
        self.held = held
        self.progress = progress
        progress.on_first = self._ring
        self.on_written = on_written  # called after each batch that recorded outcomes
        self.on_refused = on_refused  # Redis refused the credentials or rights: no retry helps
        self.give_up = threading.Event()  # set past the shutdown deadline: stop retrying
        self.dropped = 0  # starts and outcomes given up on (shutdown, refused): the reaper's
        self._flushed = False  # the batch that held the end (``_Stop``) is written
        self._inbox: deque[_Item] = deque()  # append and popleft are atomic: no lock
        self._doorbell = threading.Event()
        self._asleep = False  # True while the writer waits: only then does a submit ring
        self._asleep_until_rung = False  # ... and holds no start: only then does a start ring
        self._in_hand = 0  # taken from the inbox and not yet written; only the writer changes it
        self._holding = 0  # of those, start notices held back until due; only the writer
        # Characters of results and errors submitted (+, any thread) and written or given up
        # (-, the writer): what the backlog holds in memory.
        self._chars = HeldChars()
        # Progress reports that rode no finish call, and metrics, each on its own clock.
        self.extras = Extras(broker, progress, on_refused, self.give_up)
        self._retrying = Unwritten()  # what a write did not record, in hand till its next try
        self._waiting: dict[Lease, threading.Event] = {}  # --sync-ack: set once written

    def pending(self) -> int:
        """Return how many submitted items are not written (or given up) yet.

        Read without a lock: the writer counts items in hand before it takes them from the
        inbox, so a concurrent reader may count one twice but never misses one.
        """
        return len(self._inbox) + self._in_hand

    def backlog(self) -> int:
        """Return how many submitted items wait on Redis: ``pending`` less the start notices
        held back on purpose (each under 20 ms old, one per running task). A bound on this,
        not on ``pending``, is a bound on what Redis holds up: 500 async tasks in flight hold
        500 notices, and counted in they tripped the prefetcher's bound in a healthy run."""
        return max(0, self.pending() - self._holding)

    def backlog_chars(self) -> int:
        """Return how many characters of results and errors were submitted and not written
        (or given up) yet: the memory the backlog holds, which its count does not bound, as
        one result may be up to ``max_result_bytes``. One reader only (the prefetcher): a
        result is counted in before it is queued, and out only once written."""
        return self._chars.total()

    def unwritten(self) -> int:
        """Return how many starts and outcomes were dropped at shutdown or are not written
        yet; asked once the writer was stopped, so the end it was sent is left out."""
        flushed = self._flushed  # read first: the end leaves ``pending`` before this is set
        held = max(0, self.pending() - (0 if flushed else 1))
        return held + self.dropped  # read last: it grows before ``pending`` shrinks

    def submit_start(self, start: Start) -> None:
        self._inbox.append(start)
        if self._asleep_until_rung:  # otherwise the writer wakes before this notice is due
            self._doorbell.set()

    def start_now(self, start: Start) -> StartNow:
        """Write ``start`` from the calling thread, unheld, for a task whose last run here
        outlived its lease (``HeldLeases.note_if_outlived``): held, the notice would wait for
        this thread again. A Redis that does not answer leaves it to this writer, held; one
        that refuses this worker stops it, and the task is not run."""
        try:
            rejected = self.broker.start(self.worker_id, [start])
        except BrokerRefused as exc:
            self.on_refused(exc)
            return StartNow.REFUSED
        except BrokerUnavailable as exc:
            logger.warning(
                "Start notice not written before the run, held as usual task_id=%s error=%s",
                start.lease.task_id,
                exc,
            )
            self.submit_start(start)
            return StartNow.HELD
        log_not_recorded(logger, "start", rejected)
        return StartNow.REFUSED if rejected else StartNow.RECORDED

    def submit_finish(self, finish: Finish, *, wait: bool = False) -> None:
        """Queue ``finish``; with ``wait`` (strict --sync-ack mode) return once it is written."""
        if not wait:
            self._count_in(finish)
            self._submit(finish)
            return
        self.submit_written(finish).wait()

    def submit_written(self, finish: Finish) -> threading.Event:
        """Queue ``finish``; return an event set once it is written (or given up at
        shutdown). The event loop waits on it in a thread, after it submitted on the loop."""
        written = _Written(finish, threading.Event())
        self._count_in(finish)
        self._submit(written)
        return written.event

    def _count_in(self, finish: Finish) -> None:
        """Count ``finish``'s value in the backlog's characters, before it is queued."""
        self._chars.add(len(finish.value))

    def wake(self) -> None:
        """Queue the end: the writer flushes everything queued before it, then ends."""
        self._submit(_Stop())

    def give_up_now(self) -> None:
        """Stop retrying, past the stop's deadline: what fails from now on is dropped, left to
        the reaper; a writer waiting to try again tries once more now."""
        self.give_up.set()
        self._ring()

    def _submit(self, item: _Item) -> None:
        self._inbox.append(item)
        self._ring()

    def _ring(self) -> None:
        """Wake the writer if it sleeps: an item came, or a progress report while none waited."""
        if self._asleep:
            self._doorbell.set()

    def loop(self) -> None:
        with self.broker.pinned():  # a call per lone result: no pool hand-out each (pinned.py)
            self._write_until_stopped()

    def _write_until_stopped(self) -> None:
        # Notice and when it was taken, in the order taken (the oldest first: see ``_due``).
        held_starts: dict[Lease, tuple[Start, float]] = {}
        stopping = False
        while not stopping or self._retrying:  # at the stop, until all is written or given up
            self._sleep_until_work(held_starts)
            batch = self._take_all()
            stopping = stopping or any(isinstance(item, _Stop) for item in batch)
            self._write(batch, held_starts, flush=stopping)
            self._flushed = stopping
            if self.give_up.is_set():
                continue  # past the stop's deadline: no wait for progress or metrics either
            self.extras.send_progress(flush=stopping)  # what is due and rode no finish call
            if stopping:
                if not self._retrying:
                    self.extras.send_last_metrics()
            else:
                self.extras.send_metrics_if_due()

    def _sleep_until_work(self, held_starts: dict[Lease, tuple[Start, float]]) -> None:
        """Return at once if anything waits; else sleep until rung, a held start is due,
        tallied metrics are due to be sent, waiting progress reports are, or the next try of
        what a write did not record is (``give_up_now`` rings too)."""
        if self._inbox:
            return
        self._doorbell.clear()
        self._asleep = True  # from here a submit, a first progress report or a give-up rings
        now = time.monotonic()
        wakes = self.extras.wakes(now)
        if self._retrying:
            wakes.append(0.0 if self.give_up.is_set() else self._retrying.due)
        if held_starts:
            _, oldest = next(iter(held_starts.values()))
            wakes.append(oldest + START_NOTICE_DELAY_S)
        timeout_s = max(0.0, min(wakes) - now) if wakes else None
        # A start submitted now must get its own short timer if ours is longer.
        self._asleep_until_rung = timeout_s is None or timeout_s > START_NOTICE_DELAY_S
        if not self._inbox:  # checked again after announcing sleep: no submit is missed
            self._doorbell.wait(timeout_s)
        self._asleep = self._asleep_until_rung = False

    def _take_all(self) -> list[_Item]:
        """Take everything in the inbox, counting it in hand first (see ``pending``)."""
        count = len(self._inbox)
        self._in_hand += count
        return [self._inbox.popleft() for _ in range(count)]

    def _write(
        self,
        batch: list[_Item],
        held_starts: dict[Lease, tuple[Start, float]],
        *,
        flush: bool,
    ) -> None:
        """Send due starts and every outcome, with what an earlier write did not record if
        its try is due; a start whose outcome came is dropped unsent. On one Redis away, what
        comes waits for that try instead (worker/unwritten.py)."""
        now = time.monotonic()
        finishes = _sort(batch, held_starts, now, self._waiting)
        elided = sum(held_starts.pop(finish.lease, None) is not None for finish in finishes)
        elided += self._retrying.drop_starts(finish.lease for finish in finishes)
        starts = _due(held_starts, now, flush=flush)
        self._holding = len(held_starts)
        done = elided + sum(isinstance(item, _Stop) for item in batch)
        if self._retrying:  # what an earlier try kept goes along once due
            giving_up = self.give_up.is_set()
            if self._retrying.holds_up(now) and not giving_up:
                self._retrying.add(starts, finishes)
                self._in_hand -= done
                return
            retried_starts, retried_finishes = self._retrying.take(now, every=giving_up)
            starts, finishes = retried_starts + starts, retried_finishes + finishes
        # Counted dropped first: ``unwritten`` may count one twice, never miss one.
        self._in_hand -= done + self._try(starts, finishes, flush=flush)

    def _try(self, starts: list[Start], finishes: list[Finish], *, flush: bool) -> int:
        """Send ``starts`` and ``finishes`` once; keep what was not recorded for a later try
        (dropped past the stop's deadline). Return how many are done with: written, refused,
        or dropped."""
        error: BrokerUnavailable | None = None
        unwritten_starts: list[Start] = []
        if starts:
            unwritten_starts, error = self._send("start", starts, self.broker.start)
        # Marked before they are sent: a renewal that meets an outcome written (a retry puts the
        # task back; it may even be reserved again) before we discard the lease is no news.
        finished = [finish.lease for finish in finishes]
        self.held.ending(finished)
        # The finishing attempts' last reports, and every waiting one if due, ride the first call.
        riders = self.progress.take(finished, flush=flush) if finishes else []
        unwritten_finishes: list[Finish] = []
        for group in _by_size(finishes):
            unwritten, failed = self._send("finish", group, partial(self._finish, progress=riders))
            unwritten_finishes += unwritten
            error = error or failed
            riders = []
        written = (
            _but(finishes, {finish.lease for finish in unwritten_finishes})
            if unwritten_finishes
            else finishes
        )
        if written:
            self.held.discard(finished if written is finishes else [f.lease for f in written])
            self.on_written()
            self._chars.add(-sum(len(finish.value) for finish in written))
            for finish in written:
                if (event := self._waiting.pop(finish.lease, None)) is not None:
                    event.set()
        done = len(starts) - len(unwritten_starts) + len(written)
        if error is None and not self._retrying.failures:
            return done  # the usual case: all written, nothing kept from before
        wrote_none = len(unwritten_starts) == len(starts) and not written
        retry_in_s = self._retrying.kept(
            unwritten_starts,
            unwritten_finishes,
            time.monotonic(),
            holds_up=wrote_none and not self.broker.fails_by_node,
        )
        if error is not None:
            logger.warning(
                "Ack batch failed kind=%s size=%d attempt=%d retry_in_s=%.2f error=%s",
                "finish" if unwritten_finishes else "start",
                len(unwritten_starts) + len(unwritten_finishes),
                self._retrying.failures,
                retry_in_s,
                error,
            )
        return done

    def _finish(
        self, worker_id: str, finishes: Sequence[Finish], progress: Sequence[ProgressReport]
    ) -> list[Rejected[Finish]]:
        """Send one finish call; if it failed as Redis refusing a result too large, send its
        outcomes apart, so that only the refused one ends FAILED (worker/refused.py). The
        progress reports a failed call did not write wait for the next send."""
        try:
            try:
                return self.broker.finish(worker_id, finishes, progress)
            except BrokerUnavailable as exc:
                if not may_carry_refused(exc, finishes):
                    raise
            return finish_apart(self.broker, worker_id, finishes, progress)
        except BrokerRefused:
            raise
        except PartlyAcked as exc:
            self.progress.put_back(exc.progress_unwritten, self.progress.interval_s)
            raise
        except BrokerUnavailable:
            self.progress.put_back(progress, self.progress.interval_s)
            raise

    def _send[T: (Start, Finish)](
        self,
        kind: str,
        items: Sequence[T],
        call: Callable[[str, Sequence[T]], list[Rejected[T]]],
    ) -> tuple[list[T], BrokerUnavailable | None]:
        """Send one batch once; say what was not recorded and why. Return the items to try
        again, with the error that kept them; none past the shutdown deadline, or when Redis
        refused this worker, which stops it: they are dropped (counted in ``dropped``), and
        the reaper settles them, as at any stop that leaves outcomes unwritten."""
        error: BrokerUnavailable
        try:
            rejected = call(self.worker_id, items)
        except BrokerRefused as exc:
            return self._refused(kind, items, exc)
        except PartlyAcked as exc:
            log_not_recorded(logger, kind, exc.rejected)
            if isinstance(exc.error, BrokerRefused):
                return self._refused(kind, _but(items, exc.answered), exc.error)
            unwritten, error = _but(items, exc.answered), exc
            if not unwritten:  # only progress reports failed, put back by ``_finish``
                return [], None
        except BrokerUnavailable as exc:
            unwritten, error = list(items), exc
        else:
            log_not_recorded(logger, kind, rejected)
            return [], None
        if self.give_up.is_set():
            logger.error(
                "Ack batch dropped at shutdown kind=%s size=%d task_ids=%s error=%s (the "
                "reaper will settle these tasks)",
                kind,
                len(unwritten),
                task_ids(unwritten),
                error,
            )
            self.dropped += len(unwritten)
            return [], None
        return unwritten, error

    def _refused[T: (Start, Finish)](
        self, kind: str, items: Sequence[T], error: BrokerRefused
    ) -> tuple[list[T], None]:
        """Stop this worker for a refusal of its writes, dropping ``items``."""
        self.on_refused(error)
        log_refused(logger, kind, items, error)
        self.dropped += len(items)
        return [], None


def _but[T: (Start, Finish)](items: Sequence[T], leases: Container[Lease]) -> list[T]:
    """Return ``items`` but those whose lease is in ``leases``."""
    return [item for item in items if item.lease not in leases]


def _sort(
    batch: list[_Item],
    held_starts: dict[Lease, tuple[Start, float]],
    now: float,
    waiting: dict[Lease, threading.Event],
) -> list[Finish]:
    """Hold the batch's start notices and note its --sync-ack waiters; return its outcomes."""
    finishes: list[Finish] = []
    for item in batch:
        if isinstance(item, Finish):
            finishes.append(item)
        elif isinstance(item, Start):
            held_starts[item.lease] = (item, now)
        elif isinstance(item, _Written):
            finishes.append(item.finish)
            waiting[item.finish.lease] = item.event
    return finishes


def _due(held_starts: dict[Lease, tuple[Start, float]], now: float, *, flush: bool) -> list[Start]:
    """Take the held start notices that are due (all of them with ``flush``), oldest first.

    They are held in the order taken, each due START_NOTICE_DELAY_S after it, so the due ones
    come first and the look stops at the first that is not: one notice is held per running
    task, and 32 threads had every batch walk all 32 (docs/design.md, Worker).
    """
    due: list[Start] = []
    for start, taken in held_starts.values():
        if not flush and now - taken < START_NOTICE_DELAY_S:
            break
        due.append(start)
    for start in due:
        del held_starts[start.lease]
    return due


def _by_size(finishes: list[Finish]) -> list[list[Finish]]:
    """Split ``finishes`` into calls of at most FINISH_CALL_CHARS of results and errors each (a
    larger one alone), in order; no call for none. Failures go with successes: one call each
    kept a failing burst's outcomes waiting in memory, a round trip apiece."""
    calls: list[list[Finish]] = []
    size = 0
    for finish in finishes:
        if not calls or size + len(finish.value) > FINISH_CALL_CHARS:
            calls.append([])
            size = 0
        calls[-1].append(finish)
        size += len(finish.value)
    return calls
