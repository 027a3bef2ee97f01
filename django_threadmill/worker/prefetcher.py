"""The prefetcher: keeps the buffer filled with batched acquires, and blocks when idle."""

import logging
import threading
import time
from collections.abc import Callable

from ..broker import Acquired, Broker
from ..broker.connection import refuses_writes
from ..broker.inspect import Inspector
from ..broker.wake import BLPOP_LATE_S
from ..exceptions import BrokerRefused, BrokerUnavailable, ReservationsUnconfirmed
from ..wording import listed_values
from .backoff import REDIS_BACKOFF
from .backpressure import Backpressure
from .buffer import Runners, TaskBuffer
from .failing_calls import FailingCalls
from .fetch_plan import PROBE_EVERY_S, FetchPlan
from .held_back import BoundedWaits, HeldBackQueues, Hold
from .leases import HeldLeases, lease_clock
from .limit_runners import RunnersForLimits
from .role import RoleThread

logger = logging.getLogger(__name__)

# Longest wait for a wake token, in seconds; the broker blocks for less under a socket timeout
# shorter than twice this (broker/wake.py, idle_block_s), and the next round waits again.
IDLE_BLOCK_S = 5.0
# --burst still waits for delayed tasks due within this many ms, and this long for a queue whose
# full concurrency limit holds its tasks back
BURST_HORIZON_MS = 60_000
# A queue whose acquire call failed beside others that did not (a key of another type: it
# needs an operator) is asked again after this long; the other queues go on meanwhile.
FAILED_QUEUE_RECHECK_S = 5.0


class Prefetcher(RoleThread):
    """Reserve tasks into the buffer, as many as it has room for, from all its queues at once."""

    def __init__(
        self,
        broker: Broker,
        worker_id: str,
        queues: tuple[str, ...],
        buffer: TaskBuffer,
        held: HeldLeases,
        *,
        burst: bool,
        is_settled: Callable[[], bool],
        unwritten: Callable[[], int],
        unwritten_chars: Callable[[], int],
        on_empty: Callable[[], None],
        on_refused: Callable[[BrokerRefused], None],
        on_crash: Callable[[], None],
        limited: frozenset[str],
        runners: Callable[[], Runners],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__("threadmill-prefetcher", on_crash)
        self.broker = broker
        self.worker_id = worker_id
        self.queues = queues
        self.buffer = buffer
        self.held = held
        self.burst = burst
        self.is_settled = is_settled  # nothing buffered, running or waiting to be written
        self.clock = clock  # monotonic seconds, injectable for tests
        self._backpressure = Backpressure(buffer, unwritten, unwritten_chars, self.stopping, clock)
        self.on_empty = on_empty  # called in --burst mode once queues are drained and all is done
        self.on_refused = on_refused  # Redis refused the credentials or rights: no retry helps
        # Waiting for the reply to an acquire that reserves: a stop that ends meanwhile leaves
        # what it reserved to the reaper (docs/worker.md, Exit codes).
        self.acquiring = False
        self._progress = threading.Event()  # --burst: set when in-flight work may have settled
        self._plan = FetchPlan(queues)
        self._held_back = HeldBackQueues()
        self._limits = RunnersForLimits(
            limited,
            runners,
            buffer,
            held,
            is_held=self._held_back.is_held,
            left_out=self._plan.left_out,
        )
        self._failing = FailingCalls(logger, clock)  # says once a queue fails, once it is back
        self._bounded = BoundedWaits()  # --burst: its waits for a slot, for a failing queue
        self._start_wait_said = False  # --burst: the wait for a rate's next start was logged
        self._paused: list[str] = []  # --burst: the queues the last peek at all found paused
        # --burst: the queues whose full concurrency limit it stopped waiting for.
        self._slots_full: list[str] = []
        self._unread: list[str] = []  # --burst: the queues it ends without, their calls failing

    def nudge(self) -> None:
        """Tell a --burst prefetcher that results were written, so it looks again at once.

        Called after every finish call; a busy burst finds the event set, and ``set`` takes its
        lock even then (1.4 µs). Skipping it is safe: each wait clears the event, then looks,
        then waits, so a nudge whose results landed before that look is seen by the look.
        """
        if not self._progress.is_set():
            self._progress.set()

    def wake(self) -> None:
        """Wake the thread whether it waits for room, for a runner or for work."""
        self.buffer.wake()
        self._progress.set()
        if self.buffer.runner_freed is not None:
            self.buffer.runner_freed.set()
        # Whatever Redis answers, the stop goes on: unwoken, the thread waits at most
        # IDLE_BLOCK_S, or is failing anyway.
        try:
            self.broker.wake_process(self.queues, self.worker_id)
        except BrokerUnavailable:
            pass
        except Exception as exc:  # an error reply nothing translates: logged, not raised
            logger.warning("Waking the prefetcher failed error=%r", exc)

    def loop(self) -> None:
        with self.broker.pinned():  # a call per refill: no pool hand-out each (pinned.py)
            self._fetch_until_stopped()

    def _fetch_until_stopped(self) -> None:
        failures = 0
        while not self.stopping.is_set():
            try:
                self._round()
                failures = 0
            except BrokerRefused as exc:  # an ACL changed under a running worker, say
                self.on_refused(exc)
                return
            except BrokerUnavailable as exc:
                failures += 1
                wait_s = REDIS_BACKOFF.after(failures)
                logger.warning("Fetch failed, retrying in %.1fs error=%s", wait_s, exc)
                self.stopping.wait(wait_s)

    def _round(self) -> None:
        """Fill free buffer slots from the queues; block for a wake token if all are empty."""
        free = self.buffer.free_slots(self.stopping)
        if free == 0 or self.stopping.is_set() or self._backpressure.holds():
            return
        # Checked before fetching: a retry written after the fetch must not be missed. What
        # lands meanwhile (results written, workflow steps drained) nudges: look again then.
        self._progress.clear()
        settled = self.burst and self.is_settled()
        fetched, next_due_ms = self._fetch(free)
        if fetched:
            self._bounded.forget(Hold.SLOT)
            self._start_wait_said = False
        # Queues left out for want of slots may hold tasks: ask them before waiting, or
        # --burst would stop with work left (the refill just marked the others empty).
        if fetched or self._plan.unasked or self._limits.waited_for_a_runner(IDLE_BLOCK_S):
            return
        if self.burst and not settled:
            self._wait_for_progress(next_due_ms)
            return
        if settled and self._nothing_left(next_due_ms):
            if self._progress.is_set():  # landed after the check, maybe after the fetch
                return
            next_due_ms = self._peek_every_queue()
            if next_due_ms == 0:  # ready tasks in a queue the refill took for empty
                return
            if self._nothing_left(next_due_ms):
                self._say_left()
                self.on_empty()
                self.stopping.wait()
                return
        next_due_ms = _soonest(next_due_ms, self._held_back.next_due_ms(Hold.RECHECK))
        if next_due_ms is None or next_due_ms / 1000 >= IDLE_BLOCK_S:
            self._wait_for_work(IDLE_BLOCK_S)
        else:
            self._wait_until_due(next_due_ms / 1000)

    def _wait_for_work(self, timeout_s: float) -> bool:
        """Block for a wake token up to ``timeout_s``; True if one came. The next refill asks
        the queues the tokens came from first (docs/worker.md, Several queues)."""
        woken = self.broker.wait_for_queues(self.queues, self.worker_id, timeout_s)
        if woken is None:
            return False
        self._held_back.clear()
        self._plan.woken(woken)
        return True

    def _wait_until_due(self, due_s: float) -> None:
        """Wait until a delayed task or a rate token is due, in ``due_s``, or a wake token.

        A BLPOP's timeout ends only at the Redis server's next cron tick, up to BLPOP_LATE_S
        after it: waited in Redis, a wait of 100 ms took up to 200, and a rate limit of 50/s
        started about 10 tasks a second. So Redis is asked to block for all but that last
        tick, which is waited here (docs/schedules.md, Per-queue limits).
        """
        deadline = time.monotonic() + due_s
        blocking_s = due_s - BLPOP_LATE_S
        if blocking_s > 0 and self._wait_for_work(blocking_s):
            return
        self.stopping.wait(max(0.0, deadline - time.monotonic()))

    def _peek_every_queue(self) -> int | None:
        """--burst, before it stops: peek at every queue no limit holds back, as a refill asks
        only some and probes one it found empty only now and then (a workflow's next step in
        such a queue was left behind); return the soonest due time (0: ready tasks wait). A
        queue found holding ready tasks is asked for them from the next refill on."""
        counts = {queue: 0 for queue in self.queues if not self._held_back.is_held(queue)}
        peeked = self.broker.acquire_from(counts)
        for queue, got in zip(counts, peeked, strict=True):
            self._plan.found(queue, got.found_work, got.next_due_ms)
        self._paused = [queue for queue, got in zip(counts, peeked, strict=True) if got.paused]
        return min((a.next_due_ms for a in peeked if a.next_due_ms is not None), default=None)

    def _say_left(self) -> None:
        """--burst, as it ends: name the queues it leaves tasks in, and how many, the paused
        ones (docs/lifecycle.md, Pausing a queue) and those whose full concurrency limit it
        stopped waiting for (it ended saying nothing, where a killed worker's lapsed lease
        held the slot: docs/schedules.md, Per-queue limits). Read only for queues the last
        look found so (an empty one answers as empty): one pipelined count each. Last, the
        queues it could not read, their calls failing, at ERROR."""
        alias = self.broker.settings.alias
        self._say_tasks_in(
            self._paused,
            "Burst ends with tasks left in paused queues queues=%s: they wait until each is "
            "resumed (manage.py threadmill_queue resume <queue> --backend %s, or the admin's "
            "Resume… button)",
            alias,
        )
        self._say_tasks_in(
            self._slots_full,
            "Burst ends with tasks left in queues at their concurrency limit queues=%s: other "
            "tasks held every slot for %d s, a worker's or the lease of one that died, which "
            "holds its slot until a reaper settles it (manage.py threadmill_reap --once "
            "--backend %s)",
            BURST_HORIZON_MS // 1000,
            alias,
        )
        if self._unread:
            logger.error(
                "Burst ends without the queues it could not read queues=%s: their calls failed "
                "for %d s (the error is logged above, when each began to fail)",
                listed_values(self._unread),
                BURST_HORIZON_MS // 1000,
            )

    def _say_tasks_in(self, queues: list[str], line: str, *args: object) -> None:
        """Log ``line`` as a WARNING, its first field the ``queues`` that hold tasks and how
        many each holds; nothing when none does."""
        left = Inspector(self.broker).holding(queues) if queues else {}
        if left:
            counts = listed_values([f"{queue}:{count}" for queue, count in left.items()])
            logger.warning(line, counts, *args)

    def _nothing_left(self, next_due_ms: int | None) -> bool:
        """--burst with nothing in flight: tell whether the queues hold nothing left to run
        soon: no task due within the horizon, no queue whose rate holds ready tasks (its next
        start comes, however far), and no queue whose full concurrency limit (held by another
        process, whose finish frees a slot) has held its tasks back, or whose calls have
        failed, for less."""
        if next_due_ms is not None and next_due_ms <= BURST_HORIZON_MS:
            return False
        # A queue whose calls fail (a key of another type: an operator may mend it) is asked
        # again a while, then left: asked every few seconds, it kept the burst for good.
        failing = self._held_back.held_for(Hold.RECHECK)
        if self._bounded.waits(Hold.RECHECK, failing, BURST_HORIZON_MS):
            return False
        self._unread = failing
        paced = self._held_back.held_for(Hold.START)
        if paced:
            if not self._start_wait_said:
                self._start_wait_said = True
                logger.info(
                    "Burst waits for the next start of a rate-limited queue queues=%s",
                    listed_values(paced),
                )
            return False
        held = self._held_back.held_for(Hold.SLOT)
        if held and not self._bounded.began(Hold.SLOT):
            logger.info(
                "Burst waits for a slot of a queue at its concurrency limit queues=%s "
                "(at most %d s)",
                listed_values(held),
                BURST_HORIZON_MS // 1000,
            )
        # A holder that died keeps its slot until a reaper settles its lease, which a burst in
        # one process does only at its start: the wait is bounded as a delayed task's is.
        if self._bounded.waits(Hold.SLOT, held, BURST_HORIZON_MS):
            return False
        self._slots_full = held
        return True

    def _wait_for_progress(self, next_due_ms: int | None = None) -> None:
        """--burst with nothing reserved: wait locally for in-flight work to settle, or until
        ``next_due_ms`` (a delayed task, a rate's next start; 0: ready tasks), then look again.

        No Redis call while waiting. Results landing end the wait (the ack writer's nudge): at
        once once everything settled, else no sooner than PROBE_EVERY_S after the last look,
        as an empty queue beside a busy one is probed. Looking on every landing asked every
        queue once per lone result in a burst's last tasks. A retry, a workflow's next step or
        a task a running task enqueued is found by the next look. The due time ends it too, no
        sooner than PROBE_EVERY_S either: waited for a result alone, beside a long task, a rate
        of 5/s started its tasks 5 s apart (docs/schedules.md, Per-queue limits).
        """
        looked_at = self.clock()
        self._progress.clear()
        if self.is_settled():
            return
        due_s = IDLE_BLOCK_S if next_due_ms is None else min(next_due_ms / 1000, IDLE_BLOCK_S)
        self._progress.wait(due_s)
        while not self.stopping.is_set():
            left_s = looked_at + PROBE_EVERY_S - self.clock()
            if left_s <= 0:
                return
            self._progress.clear()
            if self.is_settled():  # after the clear: a nudge from now on ends the wait
                return
            self._progress.wait(left_s)

    def _fetch(self, free: int) -> tuple[int, int | None]:
        """Acquire up to ``free`` tasks from the queues, all asked in one round trip."""
        planned = self._plan.counts(free, self._held_back.is_held)
        counts = self._limits.asks(planned, free)
        fetched = 0
        # A queue left out for a limited one's runner may hold ready tasks: not an idle wait.
        next_due_ms: int | None = 0 if planned.keys() - counts.keys() else None
        sent_at = lease_clock()  # the leases' deadlines run from after this (HeldLeases)
        refused: BrokerUnavailable | None = None
        self.acquiring = any(counts.values())  # till buffered; a peek reserves nothing
        try:
            replies = self.broker.acquire_from(counts)
            for queue, acquired in zip(counts, replies, strict=True):
                if acquired.failed is not None:
                    refused = self._failed(queue, acquired.failed) or refused
                else:
                    self._answered(queue, acquired)
                if acquired.reservations:
                    # Held first: the lanes noted keep only the tasks this process holds.
                    self.held.add([r.lease for r in acquired.reservations], sent_at)
                    self._limits.learn(queue, acquired.reservations)
                    self.buffer.put_many(acquired.reservations)
                    fetched += len(acquired.reservations)
                if acquired.next_due_ms is not None:
                    due = acquired.next_due_ms
                    next_due_ms = due if next_due_ms is None else min(next_due_ms, due)
        finally:
            self.acquiring = False
        if refused is not None:  # raised once the other queues' reservations are buffered
            raise refused
        # Held back, or found empty and not asked this time: their next starts and delayed
        # tasks end the wait as those of the queues asked do. A failed queue's next ask is
        # no work due (``_round`` waits for it; a burst does for a while: ``_nothing_left``).
        return fetched, _soonest(
            next_due_ms, self._held_back.next_due_ms(Hold.START), self._plan.next_due_ms()
        )

    def _answered(self, queue: str, acquired: Acquired) -> None:
        """Note what the answer of ``queue``'s call says of it: a limit held its tasks back, or
        it holds work or not, and when its next delayed task is due."""
        self._failing.answered(queue, "Fetch from a queue works again queue=%s", queue)
        if acquired.held_back:  # a limit, not an empty queue, kept its tasks back
            # A full concurrency limit is looked at again soon, not at the queue's next
            # delayed task, which may be hours off (docs/schedules.md, Per-queue limits).
            if acquired.by_rate:
                self._held_back.hold(queue, acquired.next_due_ms, Hold.START)
            else:
                self._held_back.hold(queue, None, Hold.SLOT)
            return
        # A shard may hold work; a delayed task is asked for again when due.
        self._plan.found(queue, acquired.found_work, acquired.next_due_ms)
        self._limits.answered(queue, acquired.found_work)

    def _failed(self, queue: str, error: BrokerUnavailable) -> BrokerUnavailable | None:
        """Hold back ``queue``, whose call failed beside others that did not (a key of another
        type in it: docs/lifecycle.md, Keys of another type). Return ``error`` instead if it is
        Redis refusing every write (MISCONF, NOREPLICAS, READONLY: a replica), or no replica
        confirming reservations (their hand-back's wake token cleared a hold at once): only a
        queue with tasks meets either, as an empty one's call writes nothing, and no queue can
        reserve, so the refill fails and backs off as for a Redis away."""
        if refuses_writes(error) or isinstance(error, ReservationsUnconfirmed):
            return error
        self._failing.failed(
            (queue,),
            "Fetch from a queue failed, the others go on queue=%s retry_in_s=%g error=%s",
            queue,
            FAILED_QUEUE_RECHECK_S,
            error,
        )
        self._held_back.hold(queue, int(FAILED_QUEUE_RECHECK_S * 1000), Hold.RECHECK)
        return None


def _soonest(*dues: int | None) -> int | None:
    """Return the soonest of the due times ``dues`` that are known, None when none is."""
    return min((due for due in dues if due is not None), default=None)
