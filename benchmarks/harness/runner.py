"""The drain method: pre-enqueue N echo tasks, start one worker, time the results.

Timing starts when the worker process is spawned and ends when the watcher sees the last
result stored. The marginal rate counts from the first poll that saw ``mark_count`` results,
so start-up cost does not decide the ranking. Redis costs are INFO deltas over the same window.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from ..peers import Peer, RunContext, WorkerSpec
from .config import BenchConfig
from .processes import (
    TreeMemory,
    Worker,
    children_cpu_s,
    run_client,
    tree_cpu_s,
    tree_rss_mb,
)
from .redis_stats import RedisCost, cost_between, snapshot


@dataclass(frozen=True, slots=True, kw_only=True)
class Mark:
    """What the watcher saw at one poll."""

    at_s: float  # seconds since the worker was spawned
    done: int
    worker_cpu_s: float  # CPU of the worker tree so far (sampled at the mark only)
    rss_mb: float | None  # resident memory of the worker tree, None if it had exited


@dataclass(slots=True, kw_only=True)
class Drain:
    """One drain run's raw measurements."""

    tasks: int
    started_s: float | None = None  # the first poll that saw a result: start-up time
    first: Mark | None = None  # the mark_count poll
    late_rss_mb: float | None = (
        None  # worker tree memory at 90% done (a burst worker exits at 100%)
    )
    last: Mark | None = None  # the poll that saw every result
    peak_rss_mb: float | None = None  # worker tree memory, the highest of the polls' samples
    worker_cpu_s: float = 0.0  # the whole worker tree, reaped
    redis: RedisCost | None = None
    polls: int = 0
    exit_code: int | None = None
    round_trips: int | None = None  # through the delay proxy only
    notes: list[str] = field(default_factory=list)


Progress = Callable[[int, int, float], None]  # (done, total, seconds so far)


def client_argv(peer: Peer, *args: str) -> list[str]:
    return peer.python("-m", "benchmarks.harness.client", peer.name, *args)


def enqueue(peer: Peer, context: RunContext, count: int, spec: WorkerSpec) -> float:
    """Pre-enqueue ``count`` echo tasks (or naps) in a client process; return its enqueue
    seconds."""
    naps = [str(spec.task_sleep_ms)] if spec.task_sleep_ms else []
    naps += ["--async"] if spec.task_sleep_ms and spec.async_task else []
    argv = client_argv(peer, "bulk", str(count), str(spec.payload_bytes), *naps)
    return float(run_client(argv, peer.process_env(context), timeout_s=900)["seconds"])


class Watcher:
    """Poll the peer's result count until every task is stored, tracking the worker."""

    def __init__(self, config: BenchConfig, count: Callable[[], int], progress: Progress) -> None:
        self.config = config
        self.count = count
        self.progress = progress
        self.polls = 0

    def watch(self, worker: Worker, tasks: int, spawned: float, drain: Drain) -> None:
        deadline = spawned + self.config.run_timeout_s
        memory = TreeMemory(worker.pid)
        while True:
            done = self.count()
            self.polls += 1
            now = time.perf_counter()
            memory.sample(now)
            drain.peak_rss_mb = memory.peak_mb
            if drain.started_s is None and done:
                drain.started_s = now - spawned
            if drain.first is None and done >= min(self.config.mark_count, tasks):
                drain.first = Mark(
                    at_s=now - spawned,
                    done=done,
                    worker_cpu_s=tree_cpu_s(worker.pid),
                    rss_mb=tree_rss_mb(worker.pid),
                )
            if drain.late_rss_mb is None and done >= 0.9 * tasks:
                drain.late_rss_mb = tree_rss_mb(worker.pid)
            self.progress(done, tasks, now - spawned)
            if done >= tasks:
                drain.last = Mark(at_s=now - spawned, done=done, worker_cpu_s=0.0, rss_mb=None)
                return
            if worker.exit_code() is not None and done < tasks:
                raise RuntimeError(
                    f"The worker exited {worker.exit_code()} with {done}/{tasks} results "
                    f"stored. Its log ends:\n{worker.log_tail()}"
                )
            if now > deadline:
                raise TimeoutError(
                    f"{done}/{tasks} results after {self.config.run_timeout_s:.0f} s. "
                    f"The worker log ends:\n{worker.log_tail()}"
                )
            time.sleep(self.config.poll_interval_s)  # polling with a deadline


def stage(peer: Peer, spec: WorkerSpec, context: RunContext, tasks: int) -> float:
    """Empty Redis, prepare the peer's store and pre-enqueue ``tasks``; return enqueue seconds."""
    with redis.Redis.from_url(context.direct_redis_url) as client:
        client.flushall()
    peer.prepare(context)
    return enqueue(peer, context, tasks, spec)


def drain(
    peer: Peer,
    spec: WorkerSpec,
    context: RunContext,
    config: BenchConfig,
    tasks: int,
    progress: Progress,
) -> Drain:
    """Start one worker on the staged tasks, watch it store every result, stop it, add costs."""
    result = Drain(tasks=tasks)
    env = {**peer.process_env(context), **peer.worker_env(spec)}
    worker = Worker(peer.worker_argv(spec), env, context.workdir / "worker.log")
    with (
        peer.counter(context) as count,
        redis.Redis.from_url(context.direct_redis_url) as monitor,
    ):
        watcher = Watcher(config, count, progress)
        before, cpu_before = snapshot(monitor), children_cpu_s()
        spawned = time.perf_counter()
        worker.start()
        try:
            watcher.watch(worker, tasks, spawned, result)
            after = snapshot(monitor)
        finally:
            result.exit_code = worker.stop()
    result.worker_cpu_s = children_cpu_s() - cpu_before
    polls = {name: watcher.polls * peer.poll_commands.count(name) for name in peer.poll_commands}
    result.redis = cost_between(before, after, polls)
    result.polls = watcher.polls
    return result
