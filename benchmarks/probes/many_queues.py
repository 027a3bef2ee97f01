"""Measure a worker of many queues: wall time, its CPU and its Redis calls, empty and busy.

Run ``python -m benchmarks.probes.many_queues`` from the repository root. It starts a throwaway
redis-server (the first on PATH) and, for each N in ``--queues``, runs ``manage.py
threadmill_worker --processes 1 --threads T --burst`` over N queues (testproject's three, then
``q3``, ``q4``, ...) in two variants: ``empty``, where every queue is empty, and ``busy``, where
``--tasks`` echo tasks wait in ``default`` beside N-1 empty queues (staged with
``enqueue_many`` before the worker starts). Each run reports the wall time from spawn to exit,
the worker's CPU (user + system of the supervisor and its worker process, from
``getrusage(RUSAGE_CHILDREN)`` deltas) and the deltas of ``INFO commandstats``: script calls
(EVALSHA, EVAL, FCALL round trips) and every command, those run inside Lua included. A run still
going after ``--timeout`` seconds is killed and reports what it used until then (its CPU read
from the live processes); its per-task figures divide by the tasks enqueued, done or not.

``--checkout PATH`` runs another checkout's ``manage.py`` (its code and testproject, this
interpreter), so a baseline is measured with the same probe. docs/worker.md, Many queues says
what the worker asks Redis beside idle queues.
"""

import argparse
import compileall
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.harness.processes import children_cpu_s, tree_cpu_s, tree_processes
from benchmarks.harness.redis_stats import RedisCost, cost_between, snapshot
from tests.servers.redis_server import redis_process

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("empty", "busy")
EXAMPLE_QUEUES = ("default", "emails", "reports")  # testproject's tasks name them: in QUEUES
SOURCE_PACKAGES = ("django_threadmill", "testproject")  # what a worker imports from the checkout
KEY_PREFIX = "tmmany"
ENQUEUE_CHUNK = 1000  # tasks per enqueue_many script call
# Run by the checkout's ``manage.py shell -c``, so its own code writes the tasks it will read.
ENQUEUE_SOURCE = """
from django_threadmill.compat import task_backends
from testproject.example.tasks import echo

backend = task_backends["default"]
for first in range(0, {tasks}, {chunk}):
    backend.enqueue_many(echo, [((n,), {{}}) for n in range(first, min(first + {chunk}, {tasks}))])
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """What one worker command cost, from spawn to exit (or to the timeout)."""

    variant: str
    queues: int
    threads: int
    tasks: int  # enqueued before the worker started
    wall_s: float
    cpu_s: float  # user + system of the supervisor and its worker process
    cost: RedisCost
    stopped_s: float | None  # the timeout it was killed at, or None if it exited


def queue_names(count: int) -> list[str]:
    """Return ``count`` queue names (at least testproject's three, which come first)."""
    return [*EXAMPLE_QUEUES, *(f"q{n}" for n in range(3, count))]


def compile_checkout(checkout: Path) -> None:
    """Compile the checkout's packages, so workers start from bytecode as benchmarks/conftest.py
    has them do (under PYTHONDONTWRITEBYTECODE each would compile them anew)."""
    for package in SOURCE_PACKAGES:
        compileall.compile_dir(checkout / package, quiet=1)


def checkout_env(checkout: Path, url: str, queues: int, workdir: Path) -> dict[str, str]:
    """Return the environment of the checkout's manage.py, serving ``queues`` queues."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "testproject.settings",
        "PYTHONPATH": str(checkout),
        "REDIS_URL": url,
        "THREADMILL_QUEUES": ",".join(queue_names(queues)),
        "THREADMILL_DB": str(workdir / "threadmill.sqlite3"),
        "THREADMILL_KEY_PREFIX": KEY_PREFIX,
    }


def enqueue(checkout: Path, env: dict[str, str], tasks: int) -> None:
    """Stage ``tasks`` echo tasks in ``default`` with the checkout's own backend."""
    source = ENQUEUE_SOURCE.format(tasks=tasks, chunk=ENQUEUE_CHUNK)
    command = [sys.executable, "manage.py", "shell", "-c", source]
    subprocess.run(command, cwd=checkout, env=env, check=True, capture_output=True, timeout=600)


def kill_tree(pid: int) -> None:
    """SIGKILL a process and its descendants, the children first."""
    for process in reversed(tree_processes(pid)):
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


def run_worker(
    checkout: Path, env: dict[str, str], threads: int, timeout_s: float, log: Path
) -> tuple[float, float, RedisCost, float | None]:
    """Run the --burst worker; return its wall and CPU seconds, Redis cost and timeout hit."""
    client = redis.Redis.from_url(env["REDIS_URL"], decode_responses=True)
    command = [
        sys.executable, "manage.py", "threadmill_worker", "--processes", "1",
        "--threads", str(threads), "--burst", "-v", "0",
    ]  # fmt: skip
    client.config_resetstat()
    before, cpu_before = snapshot(client), children_cpu_s()
    started = time.perf_counter()
    with log.open("wb") as output:
        worker = subprocess.Popen(command, cwd=checkout, env=env, stdout=output, stderr=output)
    stopped_s: float | None = None
    try:
        code = worker.wait(timeout_s)
        wall_s, cpu_s = time.perf_counter() - started, children_cpu_s() - cpu_before
    except subprocess.TimeoutExpired:
        # Read the live tree before the kill: a killed supervisor's children are never reaped.
        wall_s, cpu_s, stopped_s = time.perf_counter() - started, tree_cpu_s(worker.pid), timeout_s
    cost = cost_between(before, snapshot(client), {})
    client.close()
    if stopped_s is not None:
        kill_tree(worker.pid)
        worker.wait()
    elif code != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
        raise RuntimeError(f"The worker exited {code}:\n{tail}")
    return wall_s, cpu_s, cost, stopped_s


def measure(
    checkout: Path, url: str, args: argparse.Namespace, variant: str, queues: int, workdir: Path
) -> Run:
    """Flush Redis, stage the variant's tasks and run one worker over ``queues`` queues."""
    with redis.Redis.from_url(url) as client:
        client.flushall()
    env = checkout_env(checkout, url, queues, workdir)
    tasks = args.tasks if variant == "busy" else 0
    if tasks:
        enqueue(checkout, env, tasks)
    wall_s, cpu_s, cost, stopped_s = run_worker(
        checkout, env, args.threads, args.timeout, workdir / "worker.log"
    )
    return Run(
        variant=variant,
        queues=queues,
        threads=args.threads,
        tasks=tasks,
        wall_s=wall_s,
        cpu_s=cpu_s,
        cost=cost,
        stopped_s=stopped_s,
    )


HEADER = (
    f"{'variant':<8}{'N':>6}{'threads':>8}{'wall s':>9}{'CPU s':>8}{'CPU µs/task':>12}"
    f"{'scripts':>10}{'/task':>8}{'commands':>11}{'/task':>8}"
)


def row(run: Run) -> str:
    """Return one line of the table; per-task columns read "-" without tasks."""

    def per_task(value: float, scale: float, spec: str) -> str:
        return format(value * scale / run.tasks, spec) if run.tasks else "-"

    cost = run.cost
    line = (
        f"{run.variant:<8}{run.queues:>6}{run.threads:>8}{run.wall_s:>9.1f}{run.cpu_s:>8.2f}"
        f"{per_task(run.cpu_s, 1e6, '.0f'):>12}{cost.script_calls:>10}"
        f"{per_task(cost.script_calls, 1, '.2f'):>8}{cost.commands:>11}"
        f"{per_task(cost.commands, 1, '.2f'):>8}"
    )
    if run.stopped_s is not None:
        line += f"  stopped after {run.stopped_s:g} s"
    return line


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", default="3,300,1000,2000", help="queue counts, comma-separated")
    parser.add_argument("--threads", type=int, default=4, help="worker --threads")
    parser.add_argument("--tasks", type=int, default=20_000, help="echo tasks of a busy run")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=", ".join(VARIANTS))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each row, each printed")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a kill")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="the checkout to measure")
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    compile_checkout(checkout)
    print(
        f"{checkout}: manage.py threadmill_worker --processes 1 --threads {args.threads} --burst;"
        f" busy = {args.tasks} echo tasks in default beside N-1 empty queues; CPU = user + system"
        " of the worker; scripts = EVALSHA + EVAL + FCALL calls; commands include those in Lua"
    )
    print(HEADER, flush=True)
    with redis_process("--appendonly", "no") as server, tempfile.TemporaryDirectory() as workdir:
        for queues in map(int, args.queues.split(",")):
            for variant in args.variants.split(","):
                for _ in range(args.repeat):
                    run = measure(checkout, server.url, args, variant, queues, Path(workdir))
                    print(row(run), flush=True)


if __name__ == "__main__":
    main()
