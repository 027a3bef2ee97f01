"""When a worker process recycles, and how a recycle begins (docs/worker.md, Recycling).

A process recycles at --max-tasks (with its jitter), once its RSS passes --max-memory, when the
system refuses the thread that was to replace one --task-timeout abandoned, and when a task held
the event loop past --task-timeout. Its buffer closes, its stop hands what it never started back
to the queues, and the supervisor starts the replacement at once while the running tasks finish.
"""

import logging
import math
import random
import threading
from typing import Protocol

from .control import RECYCLING
from .crew import Crew
from .exit_codes import ExitCode
from .memory import MIB, ResidentMemory
from .options import WorkerOptions
from .signal_flag import SignalFlag

# A worker process's recycle logs as the process (docs/observability.md, Logging).
logger = logging.getLogger("django_threadmill.worker.process")

# The --max-memory to suggest when a process passes it on its first task: this many times what it
# holds then, room for what its tasks grow it by (docs/worker.md, Recycling)
FRESH_PROCESS_ROOM = 1.5


class RecyclingProcess(Protocol):
    """What a recycle reads and asks of the worker process (worker/process.py)."""

    options: WorkerOptions
    crew: Crew
    worker_id: str
    stop_requested: SignalFlag  # a stop asked for, or a recycle begun
    loop_given_up: threading.Event  # a task held the event loop past --task-timeout

    def request_stop(self, exit_code: ExitCode = ExitCode.OK) -> None: ...

    def tell_supervisor(self, message: bytes) -> None: ...


class Recycler:
    """Count the tasks ``process`` finished, watch its RSS, and begin its recycle once."""

    def __init__(self, process: RecyclingProcess) -> None:
        self.process = process
        options = process.options
        self._count_lock = threading.Lock()
        self.max_tasks = (
            None
            if options.max_tasks is None
            else options.max_tasks + random.randint(0, options.max_tasks_jitter)
        )
        # --max-memory: the RSS probe, and how many bytes of RSS the process may pass
        self.memory = None if options.max_memory_mb is None else ResidentMemory()
        self.max_memory_bytes = (options.max_memory_mb or 0) * MIB
        self.started = False  # the buffer closed for a recycle

    def count_task(self) -> None:
        """Count a task a worker thread finished; recycle the process at --max-tasks, or once
        its RSS passes --max-memory.

        Counted when the thread is done, not when the result is written, so the ack writer's
        lag cannot let a process run past the limit. The buffer closes in the same hold of the
        count lock that reached the limit: another thread done meanwhile waits for the lock
        before it takes again, and then finds the buffer closed. Closed after the lock was let
        go, the other threads ran up to seven more tasks while this one waited for the GIL.
        """
        crew = self.process.crew
        with self._count_lock:
            crew.finished += 1
            first = crew.finished == 1
            reached = self.max_tasks is not None and crew.finished == self.max_tasks
            closed = reached and self._close_for_recycle()
        if closed:
            self._recycle_closed()
        elif not reached and self.memory is not None and not self.process.stop_requested.is_set():
            resident = self.memory.read()
            if resident > self.max_memory_bytes:
                if first:
                    self._say_limit_below_a_fresh_process(resident)
                self.recycle(resident)

    def _say_limit_below_a_fresh_process(self, resident: int) -> None:
        """Say that --max-memory was passed by the first task: a process that imported the
        tasks' modules (which the check at start cannot see) may hold that much before any
        leak, and then every process recycles after every task, forever."""
        logger.error(
            "--max-memory passed on the first task, so every worker process may recycle after "
            "every task worker_id=%s rss_mb=%.1f max_memory_mb=%s: a process holds this much "
            "once it has imported the tasks' modules and run one. Raise it well above that, "
            "e.g. --max-memory %d (docs/worker.md, Recycling)",
            self.process.worker_id,
            resident / MIB,
            self.process.options.max_memory_mb,
            math.ceil(resident * FRESH_PROCESS_ROOM / MIB),
        )

    def recycle(self, resident: int | None = None) -> None:
        """Start no more tasks, finish the running ones and exit RECYCLE; tell the supervisor
        now, so the fresh process that replaces this one takes tasks while they finish.
        ``resident``: the RSS that passed --max-memory, logged."""
        with self._count_lock:
            if not self._close_for_recycle():
                return
        if resident is not None:
            logger.warning(
                "RSS passed --max-memory, recycling worker_id=%s rss_mb=%.1f max_memory_mb=%s "
                "(it finishes the tasks it holds; a fresh process replaces it)",
                self.process.worker_id,
                resident / MIB,
                self.process.options.max_memory_mb,
            )
        self._recycle_closed()

    def _close_for_recycle(self) -> bool:
        """Close the buffer for a recycle, under the count lock, keeping the tasks never
        started for the process's stop to release; False if a recycle began already. Closed
        first: the other threads would take tasks past --max-tasks meanwhile."""
        if self.started:
            return False
        self.started = True
        self.process.crew.buffer.close(keep=True)
        return True

    def _recycle_closed(self) -> None:
        """Go on with a recycle whose buffer closed: stop the prefetcher reserving, ask the
        process to stop and tell the supervisor, with no Redis call.

        The stop wakes the prefetcher and releases what the buffer kept, each call in a thread
        of its own (worker/stop_calls.py), and counts what Redis did not take (exit 6). Made
        here, from the thread whose task ended (the event loop's, for an ``async def`` one), a
        Redis that did not answer held that thread, every async task with it, for
        socket_timeout per call; and a release it refused was left out of the exit code.
        """
        process = self.process
        # Set now, from this thread, as the main thread may wait for the GIL: with the buffer
        # closed, the prefetcher would go round its loop until then, reserving nothing.
        process.crew.prefetcher.stopping.set()
        process.request_stop(ExitCode.RECYCLE)
        process.tell_supervisor(RECYCLING)

    def replacement_refused(self) -> None:
        """The system refused the thread that was to replace one --task-timeout abandoned: the
        pool stays a thread short while that task runs, maybe for good. Recycle: the fresh
        process gets a whole pool, and the abandoned threads end with this one. Once the pool
        had none left, the process held its reserved tasks, renewing their leases, and ran none.
        """
        if self.process.stop_requested.is_set():
            return
        logger.warning(
            "Worker thread refused in place of one --task-timeout abandoned, recycling "
            "worker_id=%s (the abandoned threads end with this process)",
            self.process.worker_id,
        )
        self.recycle()

    def give_up_loop(self) -> None:
        """A task held the event loop past --task-timeout, and every other async task with it,
        maybe for good (a read without a timeout): recycle, so a fresh process serves the
        queues. The loop's tasks then get --grace-period, not a recycle's unbounded wait: what
        still runs at its end is left to the reaper, as at any stop."""
        self.process.loop_given_up.set()
        if not self.process.stop_requested.is_set():  # a stop bounds the loop by the grace period
            self.recycle()
