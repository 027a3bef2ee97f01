"""Soak run: a million echo tasks through one worker; worker RSS and Redis memory over time.

Not part of CI. ``python -m benchmarks.probes.soak`` runs 200,000 tasks; ``--long`` runs
1,000,000. A producer keeps a bounded backlog, results expire after ``--result-ttl`` seconds,
and every ``--sample-s`` seconds the run records throughput, worker RSS (supervisor and
children) and Redis ``used_memory``. The samples go to ``benchmarks/results/soak-<tasks>.json``.

This module is also the Django settings module of the run (``DJANGO_SETTINGS_MODULE=
benchmarks.probes.soak``): the test project's settings with a short ``result_ttl``.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from testproject.settings import *  # noqa: F403 (this module doubles as the run's settings)
from testproject.settings import TASKS as PROJECT_TASKS

# Read here, not from testproject.settings: that module may have been imported (and cached)
# before main() set these variables, and must never send a soak run to another Redis.
TASKS = {
    "default": {
        **PROJECT_TASKS["default"],
        "LOCATION": os.environ.get("THREADMILL_SOAK_REDIS_URL", "redis://unset-soak-redis:1/0"),
        "OPTIONS": {
            **PROJECT_TASKS["default"]["OPTIONS"],
            "key_prefix": "soak",
            "result_ttl": float(os.environ.get("THREADMILL_SOAK_RESULT_TTL", "10")),
        },
    }
}

ROOT = Path(__file__).resolve().parents[2]
ENQUEUE_CHUNK = 1000  # tasks per enqueue_many call from the producer


@dataclass(frozen=True, slots=True)
class Sample:
    elapsed_s: float
    enqueued: int
    finished: int
    tasks_per_s: float  # over the interval since the previous sample
    worker_rss_mb: float
    redis_used_mb: float
    backlog: int


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=200_000)
    parser.add_argument("--long", action="store_true", help="Run 1,000,000 tasks.")
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--backlog", type=int, default=20_000, help="Most tasks waiting.")
    parser.add_argument("--result-ttl", type=float, default=10.0)
    parser.add_argument("--sample-s", type=float, default=2.0)
    args = parser.parse_args()
    if args.long:
        args.tasks = 1_000_000
    return args


class Soak:
    """Drive one soak run: produce, sample, stop."""

    def __init__(self, args: argparse.Namespace) -> None:
        from django_threadmill.compat import task_backends

        self.args = args
        self.backend = task_backends["default"]
        self.keys = self.backend.broker.queue_keys("default")
        self.client = self.backend.broker.client
        self.samples: list[Sample] = []
        self.enqueued = 0
        env = dict(os.environ)
        self.log = (ROOT / "benchmarks" / "results" / "soak-worker.log").open("w")
        self.worker = subprocess.Popen(
            [sys.executable, "manage.py", "threadmill_worker", "--processes",
             str(args.processes), "--threads", str(args.threads)],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT,
        )  # fmt: skip

    def finished(self) -> int:
        return int(self.client.hget(self.keys.stats, "successful") or 0)

    def backlog(self) -> int:
        return int(self.client.zcard(self.keys.ready)) + int(self.client.zcard(self.keys.leases))

    def produce(self) -> None:
        from testproject.example.tasks import echo

        if self.enqueued < self.args.tasks and self.backlog() < self.args.backlog:
            count = min(ENQUEUE_CHUNK, self.args.tasks - self.enqueued)
            self.backend.enqueue_many(echo, [((n,), {}) for n in range(count)])
            self.enqueued += count

    def sample(self, started: float) -> None:
        from benchmarks.harness.processes import tree_rss_mb

        finished, elapsed = self.finished(), time.monotonic() - started
        previous = self.samples[-1] if self.samples else Sample(0, 0, 0, 0, 0, 0, 0)
        rate = (finished - previous.finished) / max(elapsed - previous.elapsed_s, 1e-9)
        used = int(self.client.info("memory")["used_memory"]) / 2**20
        rss = tree_rss_mb(self.worker.pid) or 0.0
        self.samples.append(
            Sample(round(elapsed, 2), self.enqueued, finished, round(rate), round(rss, 1),
                   round(used, 1), self.backlog())
        )  # fmt: skip
        print(json.dumps(asdict(self.samples[-1])), flush=True)

    def run(self) -> None:
        started = next_sample = time.monotonic()
        pace = threading.Event()
        while self.finished() < self.args.tasks:
            if self.worker.poll() is not None:
                raise RuntimeError(f"the worker exited with code {self.worker.returncode}")
            self.produce()
            if time.monotonic() >= next_sample:
                self.sample(started)
                next_sample += self.args.sample_s
            pace.wait(0.005)  # pacing the producer loop, not synchronising
        self.sample(started)
        self.worker.send_signal(signal.SIGTERM)
        self.worker.wait(60)


def summary(samples: list[Sample]) -> dict[str, object]:
    """Throughput and memory at the start (after warm-up), the middle and the end."""
    steady = samples[len(samples) // 10 :] or samples
    thirds = [steady[: len(steady) // 3], steady[len(steady) // 3 : 2 * len(steady) // 3],
              steady[2 * len(steady) // 3 :]]  # fmt: skip

    def mean(values: list[float]) -> float:
        return round(sum(values) / len(values), 1) if values else 0.0

    return {
        "tasks": samples[-1].finished,
        "wall_s": samples[-1].elapsed_s,
        "tasks_per_s_by_third": [mean([s.tasks_per_s for s in part]) for part in thirds],
        "worker_rss_mb_by_third": [mean([s.worker_rss_mb for s in part]) for part in thirds],
        "worker_rss_mb_max": max(s.worker_rss_mb for s in samples),
        "redis_used_mb_by_third": [mean([s.redis_used_mb for s in part]) for part in thirds],
        "redis_used_mb_max": max(s.redis_used_mb for s in samples),
    }


class SoakRun(Protocol):
    """What ``soaked`` drives: a run with its worker process and that worker's log."""

    @property
    def worker(self) -> subprocess.Popen[Any]: ...

    @property
    def log(self) -> IO[Any]: ...

    def run(self) -> None: ...


def soaked[S: SoakRun](
    args: argparse.Namespace, make: Callable[[argparse.Namespace], S], *redis_args: str
) -> S:
    """Run the soak ``make(args)`` builds, with this module as its settings, against a
    throwaway redis-server started with ``redis_args``; return it once its worker is gone."""
    os.environ.update(
        {
            "DJANGO_SETTINGS_MODULE": "benchmarks.probes.soak",
            "THREADMILL_SOAK_RESULT_TTL": str(args.result_ttl),
        }
    )
    from tests.servers.redis_server import redis_process

    with redis_process(*redis_args) as server:
        os.environ["THREADMILL_SOAK_REDIS_URL"] = server.url
        import django

        django.setup()
        soak = make(args)
        try:
            soak.run()
        finally:
            if soak.worker.poll() is None:
                soak.worker.kill()
            soak.log.close()
    return soak


def main() -> None:
    args = parse_args()
    soak = soaked(args, Soak, "--appendonly", "yes", "--appendfsync", "everysec")
    result = {"args": vars(args), "summary": summary(soak.samples),
              "samples": [asdict(s) for s in soak.samples]}  # fmt: skip
    out = ROOT / "benchmarks" / "results" / f"soak-{args.tasks}.json"
    out.write_text(json.dumps(result, indent=1))
    print(json.dumps(result["summary"], indent=1))
    print(f"samples written to {out}")


if __name__ == "__main__":
    main()
