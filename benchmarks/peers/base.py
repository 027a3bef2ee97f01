"""What the harness needs from a queue: how to start its worker and count its stored results."""

import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path

import redis

REPO_DIR = Path(__file__).resolve().parents[2]


def config_text(
    processes: int, threads: int, max_threads: int | None, async_concurrency: int | None
) -> str:
    """Processes x threads, as the table and the test ids print a worker configuration.

    An elastic pool reads ``1x2-64`` (2 threads, up to 64); an async lane adds its tasks in
    flight, ``1x4+500``.
    """
    elastic = f"-{max_threads}" if max_threads else ""
    lane = f"+{async_concurrency}" if async_concurrency else ""
    return f"{processes}x{threads}{elastic}{lane}"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSpec:
    """One worker configuration: ``processes`` processes with ``threads`` threads each."""

    threads: int
    processes: int = 1  # ours and dramatiq only: --processes
    prefetch: int = 128  # read-ahead, where the queue lets us set it
    sync_ack: bool = False  # ours only: --sync-ack
    payload_bytes: int = 100  # size of the echo argument
    task_sleep_ms: int = 0  # each task waits this long first (I/O-bound tasks): ours,
    # dramatiq and django-vtasks; time.sleep, or asyncio.sleep when async_task
    async_task: bool = False  # the task is an `async def` (anap) instead of a plain one (nap)
    max_threads: int | None = None  # ours only: --max-threads, an elastic pool from `threads`
    async_concurrency: int | None = None  # ours only: --async-concurrency, async tasks in flight
    burst: bool = True  # ours only: exit once the queues are empty (--burst)
    settings: str | None = None  # ours only: the worker's --settings (a project's own LOGGING)

    @property
    def config(self) -> str:
        """Processes x threads, as the table and the test ids print it (config_text)."""
        return config_text(self.processes, self.threads, self.max_threads, self.async_concurrency)

    @property
    def in_flight(self) -> int:
        """Tasks one process can have running at once: what the ideal rate is made of."""
        if self.async_task and self.async_concurrency:
            return self.async_concurrency
        return self.max_threads or self.threads

    @property
    def ideal_rate(self) -> float | None:
        """Tasks/s if every slot always held a task and waiting were all a task cost."""
        return 1000 * self.in_flight / self.task_sleep_ms if self.task_sleep_ms else None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunContext:
    """Where one run happens."""

    redis_url: str  # what the worker and the client connect to (maybe through the delay proxy)
    direct_redis_url: str  # what the harness polls and snapshots: never through the proxy
    workdir: Path  # a fresh temp dir: SQLite files, worker logs
    database_url: str | None = None  # a PostgreSQL server, for the peers that need one


def with_db(url: str, db: int) -> str:
    """Return ``url`` pointing at Redis database ``db``."""
    base, _, _ = url.rpartition("/")
    return f"{base}/{db}"


class Peer(ABC):
    """One queue under test, seen from the harness."""

    name: str  # the id in results and on the client command line
    label: str  # what the table prints
    distribution: str  # the PyPI name, for the version line
    module: str  # imported by its worker: absent means "not installed", so the peer is skipped
    max_threads: int | None = None  # None: any thread count; 1: a single-threaded worker
    read_ahead: str = "128"  # how read-ahead is set, or the shipped behaviour when it cannot be
    slow: bool = False  # drains far below 1,000 tasks/s: runs get the smaller task count
    poll_commands: tuple[str, ...] = ()  # the Redis commands of one count, left out of the costs
    supports_pickup: bool = False  # has a client-side pickup latency probe
    needs_postgres: bool = False  # the harness passes a PostgreSQL URL in RunContext

    def __str__(self) -> str:
        return self.name

    @property
    def client_module(self) -> str:
        """The module with enqueue_one, enqueue_bulk (and pickup), run by harness/client.py."""
        return f"benchmarks.peers.{self.package}.client"

    @property
    def package(self) -> str:
        """The package under benchmarks/peers/ with this peer's tasks and client."""
        return self.name

    def missing(self) -> str | None:
        """Return why this peer cannot run here, or None."""
        if find_spec(self.module) is None:
            return f"{self.distribution} is not installed: pip install -e '.[bench]'"
        return None

    def version(self) -> str:
        return metadata.version(self.distribution)

    def env(self, context: RunContext) -> dict[str, str]:
        """What this peer adds to the environment of its worker and client processes."""
        return {"BENCH_REDIS_URL": context.redis_url, "BENCH_WORKDIR": str(context.workdir)}

    def process_env(self, context: RunContext) -> dict[str, str]:
        """The full environment of a worker or client process of this peer."""
        return {**os.environ, "PYTHONPATH": str(REPO_DIR), **self.env(context)}

    def worker_env(self, spec: WorkerSpec) -> dict[str, str]:
        """What a drain's worker process of ``spec`` adds to ``process_env``."""
        return {}

    def lacks(self, spec: WorkerSpec) -> str | None:
        """Return why this peer's worker cannot run ``spec`` (a flag, a task), or None."""
        return None

    def prepare(self, context: RunContext) -> None:  # noqa: B027 (optional hook)
        """Get the store ready before the first enqueue (for example, migrate a database)."""

    def python(self, *args: str) -> list[str]:
        return [sys.executable, *args]

    @abstractmethod
    def worker_argv(self, spec: WorkerSpec) -> list[str]:
        """The worker command line for ``spec``."""

    @abstractmethod
    def counter(self, context: RunContext) -> AbstractContextManager[Callable[[], int]]:
        """Open a function that counts stored results, one cheap query per call."""


@contextmanager
def redis_counter(url: str, command: str, *args: str) -> Iterator[Callable[[], int]]:
    """Count with one Redis command (DBSIZE, ZCARD, HLEN) on a connection of its own."""
    with redis.Redis.from_url(url) as client:
        yield lambda: int(client.execute_command(command, *args))


@contextmanager
def staged_counter(url: str, *holding: tuple[str, str]) -> Iterator[Callable[[], int]]:
    """Count the tasks staged in the first of ``holding`` (a command that sizes a key, and the
    key: ``("LLEN", queue)``), then each call the ones that left all of them.

    ``holding`` lists where a task waits and then runs, in the order it moves through them, and
    one count reads them in that order: a task moving between two is counted as not done
    (twice), never as done early.
    """
    with redis.Redis.from_url(url) as client:
        staged = int(client.execute_command(*holding[0]))
        if not staged:  # else the watcher would wait for its timeout, counting nothing
            raise RuntimeError(f"No task staged in {holding[0][1]}: has its key been renamed?")

        def done() -> int:
            pipe = client.pipeline(transaction=False)
            for command, key in holding:
                pipe.execute_command(command, key)
            return staged - sum(int(size) for size in pipe.execute())

        yield done
