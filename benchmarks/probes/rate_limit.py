"""Measure the start rate a rate-limited queue keeps: starts per second against the limit.

Run ``python -m benchmarks.probes.rate_limit [--rate 750/s] [--processes 1 2] [--threads 4]
[--tasks 3000]`` from the repository root. It uses ``REDIS_URL`` or starts a throwaway
redis-server, gives the test project's ``emails`` queue the rate, and for each process count
enqueues that many ``echo`` tasks there and runs ``manage.py threadmill_worker --burst`` on it
until the queue is empty. Each line gives the starts per second from the first start to the
last (the tasks' ``started_at``) and the wall time of the run. Keys are deleted afterwards.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.probes.project import probe_project

ROOT = Path(__file__).resolve().parents[2]
QUEUE = "emails"


def starts(ids: list[str]) -> list[datetime]:
    """The start times of the tasks ``ids``, earliest first."""
    from testproject.example.tasks import echo

    times = [echo.get_result(task_id).started_at for task_id in ids]
    missing = sum(1 for at in times if at is None)
    if missing:
        raise SystemExit(f"{missing} tasks never started: the worker stopped early")
    return sorted(at for at in times if at is not None)


def run(processes: int, threads: int, tasks: int) -> None:
    """Enqueue ``tasks`` echo tasks on the limited queue, drain it with a burst worker of
    ``processes`` processes of ``threads`` threads, and print the rate its starts kept."""
    from django_threadmill.testing import flush
    from testproject.example.tasks import echo

    flush()
    limited = echo.using(queue_name=QUEUE)
    ids = [limited.enqueue(n).id for n in range(tasks)]
    began = time.perf_counter()
    subprocess.run(
        [sys.executable, "manage.py", "threadmill_worker", "--queue", QUEUE, "--burst",
         "--processes", str(processes), "--threads", str(threads), "-v", "0"],
        cwd=ROOT, env=os.environ, check=True,
    )  # fmt: skip
    wall_s = time.perf_counter() - began
    at = starts(ids)
    span_s = (at[-1] - at[0]).total_seconds()
    print(
        f"  {processes} process(es) x {threads} threads: {(len(at) - 1) / span_s:,.0f} starts/s "
        f"over {span_s:.2f} s, wall {wall_s:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", default="750/s")
    parser.add_argument("--processes", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--tasks", type=int, default=3000)
    args = parser.parse_args()
    os.environ["THREADMILL_OPTIONS"] = json.dumps({"queue_limits": {QUEUE: {"rate": args.rate}}})
    with probe_project("ratebench"):
        print(f"queue {QUEUE!r} limited to {args.rate}:")
        for processes in args.processes:
            run(processes, args.threads, args.tasks)


if __name__ == "__main__":
    main()
