"""Mixed soak: a long run of varied tasks through one worker process; its RSS as it goes.

Not part of CI. ``python -m benchmarks.probes.soak_mix --tasks 200000`` runs one worker process
(an elastic pool of ``--threads`` to ``--max-threads`` threads, the async lane, ``--task-timeout``)
against a throwaway redis-server, and a producer keeps a bounded backlog of rounds of the tasks
in ``soak_mix_tasks``: failures with long chained tracebacks, retries with backoff, progress
reports, async tasks (some cancelled by the timeout, some failing), sync tasks that overrun the
timeout (their thread is abandoned and replaced), chains (some failing) and groups, unique tasks
(some duplicates), 100 KB arguments and results, tasks that enqueue tasks (sync and async), tasks
that take their context, tasks deferred a few ms (each its own ``run_after`` to the ms). Every
``--sample-every`` finished attempts it reads the worker process's RSS from /proc and asks the
worker (a ``memory_report`` task) which object types grew since the first sample. The samples go
to ``benchmarks/results/soak-mix-<tasks>.json``.

To find what holds memory, run with ``--tracemalloc 8``: the worker then traces allocations
(8 frames each, about ten times slower) and each sample lists the sites that grew most.

The run's settings are those of the echo soak (``benchmarks.probes.soak``): the test project,
key prefix ``soak``, results kept ``--result-ttl`` seconds.
"""

import argparse
import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TRACED_TIMEOUT_S = 30.0  # --task-timeout under --tracemalloc: a snapshot and its diff take seconds


@dataclass(frozen=True, slots=True)
class Sample:
    elapsed_s: float
    finished: int  # attempts finished: successful, failed and retried
    tasks_per_s: float  # over the interval since the previous sample
    worker_rss_mb: float  # the one worker process, from /proc/<pid>/status (VmRSS)
    supervisor_rss_mb: float
    redis_used_mb: float
    objects: int  # live objects in the worker, after a gc.collect()
    grown: list[list[Any]]  # object types that grew most since the first sample
    sites: list[dict[str, Any]] | None  # with --tracemalloc: allocation sites that grew most


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=50_000, help="Attempts to finish.")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--max-threads", type=int, default=8, help="The elastic pool's ceiling.")
    parser.add_argument("--thread-idle", type=float, default=2.0)
    parser.add_argument("--async-concurrency", type=int, default=50)
    parser.add_argument("--task-timeout", type=float, default=0.5)
    parser.add_argument("--backlog", type=int, default=2_000, help="Most tasks waiting.")
    parser.add_argument("--result-ttl", type=float, default=10.0)
    parser.add_argument("--sample-every", type=int, default=5_000, help="Attempts per sample.")
    parser.add_argument("--warm-up", type=int, default=1_000, help="Attempts before the first.")
    parser.add_argument(
        "--tracemalloc", type=int, default=0, metavar="FRAMES",
        help="Trace the worker's allocations; --task-timeout is then at least "
        f"{TRACED_TIMEOUT_S:.0f} s (a memory report takes seconds).",
    )  # fmt: skip
    args = parser.parse_args()
    if args.tracemalloc:
        args.task_timeout = max(args.task_timeout, TRACED_TIMEOUT_S)
    return args


def vm_rss_mb(pid: int) -> float:
    """Resident memory of one process in MiB, read from /proc (0 once it has exited)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    kb = next(line.split()[1] for line in status.splitlines() if line.startswith("VmRSS:"))
    return int(kb) / 1024


class Producer:
    """Enqueue rounds of the mix while the backlog is below its bound."""

    def __init__(self, backend: Any, overrun_s: float) -> None:
        self.backend = backend
        self.overrun_s = overrun_s  # how long the tasks that overrun --task-timeout sleep
        self.rounds = itertools.count()

    def one_round(self) -> None:
        from django.utils import timezone

        from benchmarks.probes import soak_mix_tasks as t
        from django_threadmill.workflows import chain, group, step

        n = next(self.rounds)
        blob = "b" * t.BLOB_CHARS
        many = self.backend.enqueue_many
        many(t.echo, [((i,), {}) for i in range(4)])
        many(t.big, [((blob,), {}) for _ in range(3)])
        many(t.deep_fail, [((i,), {}) for i in range(3)])
        many(t.flaky, [((i,), {}) for i in range(2)])
        many(t.reporting, [((20,), {}) for _ in range(3)])
        many(t.with_context, [((), {}) for _ in range(2)])
        many(t.async_quick, [((i,), {}) for i in range(4)])
        many(t.async_fail, [((n,), {})])
        many(t.spawner, [((i,), {}) for i in range(2)])
        many(t.async_spawner, [((i,), {}) for i in range(2)])
        if n % 2 == 0:  # cancelled by --task-timeout: each holds an async slot that long
            t.async_hang.enqueue(n)
        if n % 10 == 0:  # its thread is abandoned, and replaced
            t.overrun.enqueue(self.overrun_s)
        chain(step(t.add, n, 1), step(t.add, 2)).enqueue()
        chain(step(t.deep_fail, n), step(t.add, 2)).enqueue()  # fails: the rest never runs
        group(step(t.echo, 1), step(t.echo, 2), then=step(t.total)).enqueue()
        for key in (f"u{n}", f"v{n}", f"u{n}"):  # the second u is a duplicate: not stored
            t.unique.enqueue(key)
        for ms in (5, 20):  # a run_after to the ms: each its own Task in the worker
            when = timezone.now() + timedelta(milliseconds=ms)
            t.echo.using(run_after=when).enqueue(n)


class SoakMix:
    """Drive one run: produce, sample, stop."""

    def __init__(self, args: argparse.Namespace) -> None:
        from django_threadmill.compat import task_backends

        self.args = args
        self.backend = task_backends["default"]
        self.client = self.backend.broker.client
        self.keys = [self.backend.broker.queue_keys(name) for name in ("default", "reports")]
        self.producer = Producer(self.backend, args.task_timeout + 0.2)
        self.samples: list[Sample] = []
        env = dict(os.environ)
        if args.tracemalloc:
            env["THREADMILL_SOAK_TRACEMALLOC"] = str(args.tracemalloc)
        self.log = (ROOT / "benchmarks" / "results" / "soak-mix-worker.log").open("w")
        self.worker = subprocess.Popen(
            [sys.executable, "manage.py", "threadmill_worker", "--processes", "1",
             "--threads", str(args.threads), "--max-threads", str(args.max_threads),
             "--thread-idle", str(args.thread_idle),
             "--async-concurrency", str(args.async_concurrency),
             "--task-timeout", str(args.task_timeout)],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def finished(self) -> int:
        counts = [self.client.hmget(k.stats, "successful", "failed", "retry") for k in self.keys]
        return sum(int(n or 0) for row in counts for n in row)

    def backlog(self) -> int:
        keys = self.keys[0]
        return sum(int(self.client.zcard(key)) for key in (keys.ready, keys.delayed, keys.leases))

    def worker_pid(self) -> int:
        """The supervisor's one worker process (0 between a death and its restart)."""
        pid = self.worker.pid
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            return 0
        return int(children[0]) if children else 0

    def memory_report(self) -> dict[str, Any]:
        """Run ``memory_report`` in the worker (on the reports queue) and return its value."""
        from benchmarks.harness.waiting import poll_until
        from benchmarks.probes.soak_mix_tasks import memory_report
        from django_threadmill.compat import TaskResultStatus

        result = memory_report.using(queue_name="reports").enqueue()
        poll_until(lambda: result.refresh() or result.is_finished, "the memory report", 120, 0.05)
        if result.status != TaskResultStatus.SUCCESSFUL:
            raise RuntimeError(f"memory_report failed: {result.errors}")
        return dict(result.return_value)

    def sample(self, started: float) -> None:
        report = self.memory_report()
        finished, elapsed = self.finished(), time.monotonic() - started
        previous = self.samples[-1] if self.samples else None
        done_before, since = (previous.finished, previous.elapsed_s) if previous else (0, 0.0)
        used = int(self.client.info("memory")["used_memory"]) / 2**20
        self.samples.append(
            Sample(round(elapsed, 1), finished, round((finished - done_before) / (elapsed - since)),
                   round(vm_rss_mb(self.worker_pid()), 1), round(vm_rss_mb(self.worker.pid), 1),
                   round(used, 1), report["objects"], report["grown"], report.get("sites"))
        )  # fmt: skip
        print(json.dumps(asdict(self.samples[-1])), flush=True)

    def run(self) -> None:
        started = time.monotonic()
        next_sample = self.args.warm_up  # the first sample is the baseline of the others
        pace = threading.Event()
        while (finished := self.finished()) < self.args.tasks:
            if self.worker.poll() is not None:
                raise RuntimeError(f"the worker exited with code {self.worker.returncode}")
            if finished >= next_sample:
                self.sample(started)
                next_sample = finished + self.args.sample_every
            if self.backlog() < self.args.backlog:
                self.producer.one_round()
            else:
                pace.wait(0.005)  # pacing the producer loop, not synchronising
        self.sample(started)
        self.worker.send_signal(signal.SIGTERM)
        self.worker.wait(60)


def main() -> None:
    args = parse_args()
    sys.path.insert(0, str(ROOT))
    from benchmarks.probes.soak import soaked

    soak = soaked(args, SoakMix, "--appendonly", "no")
    out = ROOT / "benchmarks" / "results" / f"soak-mix-{args.tasks}.json"
    out.write_text(json.dumps({"args": vars(args), "samples": [asdict(s) for s in soak.samples]}))
    rss = [s.worker_rss_mb for s in soak.samples]
    print(f"worker RSS MiB by sample: {rss}\nsamples written to {out}")


if __name__ == "__main__":
    main()
