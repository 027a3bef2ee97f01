"""The thread roles of one worker process, built from its options and wired to each other.

The prefetcher fills the buffer; worker threads (the pool) and the event loop lane run what it
holds; the ack writer writes their outcomes; the lease keeper keeps their leases; the workflow
drainer advances the workflows their steps belong to. The pool's
sizing, the watchdog and the loop monitor look on. ``WorkerProcess`` starts and stops them.
"""

from collections.abc import Callable

from ..broker import Broker, Reservation
from ..conf.settings import NO_LIMIT
from ..exceptions import BrokerRefused
from .ack_writer import AckWriter
from .buffer import Runners, TaskBuffer
from .cancelled_steps import CancelledSteps
from .cpus import process_cpu_share
from .event_loop import EventLoopLane, LoopMonitor
from .executor import Executor
from .lanes import is_async, known_lane, sorted_on_loop
from .leases import HeldLeases, LeaseKeeper
from .loop_hold import LoopHoldLimit
from .options import WorkerOptions
from .pacing import Pacer
from .pool import PoolSizing, WorkerPool
from .prefetcher import Prefetcher
from .role import RoleThread
from .runner import RunnerParts
from .sizer import PoolLimits
from .threads import WorkerThread
from .watchdog import Watchdog
from .workflow_drainer import WorkflowDrainer


class Crew:
    """Every role thread of one worker process (not started)."""

    def __init__(
        self,
        options: WorkerOptions,
        broker: Broker,
        executor: Executor,
        worker_id: str,
        *,
        drain_outbox: Callable[[str], int],
        lease_interval_s: float,
        on_task_done: Callable[[], None],
        on_empty: Callable[[], None],
        on_refused: Callable[[BrokerRefused], None],
        on_crash: Callable[[], None],
        release: Callable[[list[Reservation]], bool],
        on_first_renewal: Callable[[], None] = lambda: None,
    ) -> None:
        self.options = options
        self.held = HeldLeases(broker.settings.lease_ttl_s)
        self.buffer = TaskBuffer(
            options.readahead(options.threads, async_tasks=False),
            is_async,
            known_lane,
            sorted_on_loop,
        )
        self.writer = AckWriter(
            broker,
            worker_id,
            self.held,
            executor.progress,
            self._on_written,
            on_crash,
            on_refused=on_refused,
        )

        self.pacer = Pacer(broker, release, self.buffer.put_many)
        parts = RunnerParts(
            buffer=self.buffer,
            executor=executor,
            writer=self.writer,
            held=self.held,
            pacer=self.pacer,
            cancelled_steps=CancelledSteps(broker),
            sync_ack=options.sync_ack,
            on_task_done=on_task_done,
        )

        def make_thread(index: int) -> WorkerThread:
            return WorkerThread(index, parts, on_crash)

        self.pool = WorkerPool(make_thread, self.buffer, self._readahead)
        self.pool.add(options.threads, start=False)
        self.lane = EventLoopLane(options.async_concurrency, parts, on_crash)
        self.buffer.on_first_async = self._resize
        self.hold_limit = LoopHoldLimit(options.task_timeout_s, broker.settings.lease_ttl_s)
        self.monitor = LoopMonitor(self.lane, on_crash, self.hold_limit)
        self.keeper = LeaseKeeper(
            broker,
            worker_id,
            options.queues,
            self.held,
            lease_interval_s,
            on_crash,
            on_refused=on_refused,
            threads=self.pool.live_count,
            on_first_renewal=on_first_renewal,
        )
        self.drainer = WorkflowDrainer(
            broker, options.queues, drain_outbox, self._on_written, on_crash
        )
        self.prefetcher = Prefetcher(
            broker,
            worker_id,
            options.queues,
            self.buffer,
            self.held,
            burst=options.burst,
            is_settled=lambda: (
                self.buffer.is_idle()
                and self.pacer.is_idle()
                and self.writer.pending() == 0
                and self.drainer.is_idle()
            ),
            unwritten=self.writer.backlog,
            unwritten_chars=self.writer.backlog_chars,
            on_empty=on_empty,
            on_refused=on_refused,
            on_crash=on_crash,
            # A queue with a rate as one with a concurrency limit: a task reserved behind
            # busy runners held a start turn an idle process could have taken (docs/schedules.md,
            # Per-queue limits).
            limited=frozenset(
                queue for queue in options.queues if broker.settings.limit_of(queue) != NO_LIMIT
            ),
            runners=self._runners,
        )
        limits = PoolLimits(
            min_threads=options.threads,
            max_threads=options.max_threads or options.threads,
            target_wait_s=options.target_wait_s,
            idle_s=options.thread_idle_s,
            cpu_share=process_cpu_share(options.processes),
        )
        self.sizing = PoolSizing(self.pool, limits, on_crash) if limits.elastic else None
        self.watchdog = (
            None
            if options.task_timeout_s is None
            else Watchdog(
                options.task_timeout_s,
                self.pool.threads,
                self.pool.abandon_if_overdue,
                executor,
                self.writer,
                self.buffer,
                on_task_done,
                on_crash,
            )
        )
        self.finished = 0  # tasks the pool and the lane finished (counted by the process)

    def _runners(self) -> Runners:
        """Return how many tasks this process can run at once: its threads (those an elastic
        pool may grow to) and, once async tasks came, the event loop's."""
        return Runners(
            threads=max(self.pool.live_count(), self.options.max_threads or 0),
            loop=self.options.async_concurrency if self.buffer.saw_async else 0,
        )

    def _readahead(self, live_threads: int) -> int:
        return self.options.readahead(live_threads, async_tasks=self.buffer.saw_async)

    def _resize(self) -> None:
        """Async tasks came: the read-ahead now covers the event loop too."""
        self.buffer.resize(self._readahead(self.pool.staying()))

    def _on_written(self) -> None:
        """Results landed, or workflow steps were enqueued: a --burst prefetcher waiting for
        them looks again at once."""
        if self.options.burst:
            self.prefetcher.nudge()

    def start_order(self) -> list[RoleThread]:
        """Every role, in the order to start them: writers and keepers before producers."""
        lookers_on = [role for role in (self.sizing, self.watchdog) if role is not None]
        return [
            self.keeper,
            self.writer,
            self.drainer,
            self.lane,
            self.monitor,
            *self.pool.threads,
            self.prefetcher,
            *lookers_on,
        ]
