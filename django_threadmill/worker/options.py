"""The settings one worker process runs with, validated once at the command edge."""

from collections.abc import Iterable
from dataclasses import dataclass

from ..backend import ThreadmillTaskBackend
from ..conf.settings import check_queue_name
from ..exceptions import ImproperlyConfiguredThreadmill
from ..wording import a_type, listed_names, shown

MAX_PREFETCH = 10_000  # tasks one process may hold unstarted; above this a crash strands too much
# Worker threads one process may start with (--threads) or grow to (--max-threads): each costs
# about 8 MB of address space, so past this a process meets the system's thread or memory limit.
MAX_THREADS = 10_000
# Async tasks one process's event loop may run at once (--async-concurrency): each holds its
# lease, so past this a crash strands too much, as MAX_PREFETCH says, and one renewal call holds
# Redis for too long.
MAX_ASYNC_CONCURRENCY = 10_000
# Worker processes one supervisor keeps (--processes): it forks each and waits on each one's
# socket and sentinel; past this a typo (an extra digit or twenty) built its slots for ever.
MAX_PROCESSES = 1_000
READAHEAD_PER_THREAD = 4  # tasks reserved ahead per live worker thread, without --prefetch
DEFAULT_ASYNC_CONCURRENCY = 100  # async tasks one process's event loop runs at once
DEFAULT_TARGET_WAIT_S = 0.05  # how long tasks may wait for a busy pool before it grows
DEFAULT_THREAD_IDLE_S = 60.0  # a thread idle this long is retired, down to --threads


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerOptions:
    """What ``threadmill_worker`` was asked to do, shared by the supervisor and its processes."""

    backend_alias: str
    queues: tuple[str, ...]
    processes: int
    threads: int  # worker threads at start, and the fewest the pool shrinks to
    prefetch: int | None  # tasks reserved ahead; None: follows the live pool (readahead)
    max_tasks: int | None
    max_tasks_jitter: int
    burst: bool
    sync_ack: bool
    grace_period_s: float
    task_timeout_s: float | None
    reap_interval_s: float | None
    max_threads: int | None = None  # None: the pool stays at ``threads``
    max_memory_mb: int | None = None  # recycle a process whose RSS passes this many MiB
    target_wait_s: float = DEFAULT_TARGET_WAIT_S
    thread_idle_s: float = DEFAULT_THREAD_IDLE_S
    async_concurrency: int = DEFAULT_ASYNC_CONCURRENCY

    def readahead(self, live_threads: int, *, async_tasks: bool) -> int:
        """Return how many tasks may wait in the buffer: ``--prefetch``, or enough to keep the
        live threads (and, once async tasks came, the event loop) fed."""
        if self.prefetch is not None:
            return self.prefetch
        wanted = READAHEAD_PER_THREAD * live_threads
        if async_tasks:
            wanted += self.async_concurrency
        return max(1, min(wanted, MAX_PREFETCH))


def served_queues(backend: ThreadmillTaskBackend, asked: Iterable[str] | None) -> tuple[str, ...]:
    """Return the queues to serve: ``asked``, else (None) every queue in QUEUES.

    Raise ImproperlyConfiguredThreadmill for a name that is not valid or not in QUEUES, and
    when nothing is asked of a backend whose empty QUEUES lets tasks go to any queue; raise
    ValueError for an empty ``asked``, which names no queue (serving all would run tasks of
    queues the caller left out); raise TypeError for one str or no list, named cut short (one
    str of 100,000 characters, echoed twice, made a message of 200,000).
    """
    if isinstance(asked, str | bytes):  # iterating it would serve its letters
        raise TypeError(
            f"queues={shown(asked)} is one string, not a list of queue names. Pass a list, e.g. "
            f"queues=[{shown(asked)}]."
        )
    if asked is not None and not isinstance(asked, Iterable):
        raise TypeError(
            f"queues={shown(asked)} is {a_type(asked)}, not a list of queue names. Pass a list, "
            "e.g. queues=['default'], or None for every queue in QUEUES."
        )
    if asked is None:
        queues = sorted(backend.queues)
    elif not (queues := list(asked)):
        raise ValueError(
            "queues is empty: it names no queue to serve. Name the queues, or pass "
            "queues=None (the default) for every queue in QUEUES."
        )
    if not queues:
        raise ImproperlyConfiguredThreadmill(
            f"TASKS[{backend.alias!r}]['QUEUES'] is empty, so tasks may be enqueued to any "
            "queue and which ones to serve is not known. List the queues in QUEUES, or name "
            "them (--queue NAME; drain(queues=[...]))."
        )
    for queue in queues:
        check_queue_name(queue)
        if backend.queues and queue not in backend.queues:
            raise ImproperlyConfiguredThreadmill(
                f"Queue {queue!r} is not in TASKS[{backend.alias!r}]['QUEUES'] "
                f"({listed_names(sorted(backend.queues))}). Add it there or pick one of those."
            )
    return tuple(dict.fromkeys(queues))
