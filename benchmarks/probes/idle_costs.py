"""Measure what an idle worker costs: Redis commands and its own CPU per second, and pickup.

Run ``python -m benchmarks.probes.idle_costs`` from the repository root. It starts a throwaway
redis-server (the first on PATH) and, for each row, runs ``manage.py threadmill_worker
--processes P --threads 1`` serving N queues of a mixed fleet (every 5th queue sharded 4 ways,
every 7th with ``concurrency: 2`` and every 11th with ``rate: 60/m``
(unless sharded), every 13th paused), waits
``--warm-up`` seconds once its processes renewed their first leases, then counts, over
``--seconds``, the deltas of ``INFO commandstats`` (commands run inside Lua included) and the
CPU time of the supervisor and its worker processes (user + system). Variants: ``reap`` (the
supervisor's reap pass every ``--reap-interval``, the default: ``lease_ttl``), ``no-reap``
(``--reap-interval 0``), ``schedules`` (five cron schedules, none due in the window) and
``after-tasks`` (one task run in each queue before the window, so the ack writer has sent
metrics). Last, it enqueues ``--samples`` tasks one at a time into the last (idle) queue and
reports enqueue-to-start (the record's ``started_at - enqueued_at``, one host's clock).

Pick ``--seconds`` as a multiple of ``lease_ttl`` (``--lease-ttl``, 60 s by default) so the
window holds whole reap passes and renewal rounds.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import psutil
import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.harness.processes import cpu_s
from benchmarks.harness.redis_stats import cost_between, snapshot
from tests.servers.redis_server import redis_process

if TYPE_CHECKING:
    from django_threadmill.backend import ThreadmillTaskBackend
    from django_threadmill.compat import Task

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("reap", "no-reap", "schedules", "after-tasks")
SCHEDULES = {
    f"nightly-{n}": {"task": "testproject.example.tasks.echo", "cron": f"{n} 3 * * *", "args": [n]}
    for n in range(5)
}


@dataclass(frozen=True, slots=True)
class Row:
    queues: int
    processes: int
    variant: str
    commands_per_s: float
    scripts_per_s: float
    cpu_ms_per_s: float
    redis_cpu_ms_per_s: float
    top: dict[str, int]
    pickup_ms: list[float]


EXAMPLE_QUEUES = ("default", "emails", "reports")  # testproject's tasks name them: in QUEUES


def queue_names(count: int) -> list[str]:
    """Return ``count`` queue names, testproject's three first."""
    return [*EXAMPLE_QUEUES, *(f"q{n:03d}" for n in range(3, count))][:count]


def fleet_options(queues: list[str], lease_ttl_s: float, schedules: bool) -> dict[str, object]:
    """Return the OPTIONS of the mixed fleet: some queues sharded, limited or rate-limited."""
    options: dict[str, object] = {
        "queue_shards": {q: 4 for n, q in enumerate(queues) if n % 5 == 4},
        "queue_limits": {
            **{q: {"concurrency": 2} for n, q in enumerate(queues) if n % 7 == 6 and n % 5 != 4},
            **{q: {"rate": "60/m"} for n, q in enumerate(queues) if n % 11 == 10 and n % 5 != 4},
        },
        "lease_ttl": lease_ttl_s,
    }
    if schedules:
        options["schedules"] = {
            name: {**entry, "queue_name": queues[0]} for name, entry in SCHEDULES.items()
        }
    return options


def run_row(url: str, args: argparse.Namespace, queues: int, processes: int, variant: str) -> Row:
    """Run one worker command over ``queues`` queues and measure it idle, then its pickup."""
    names = queue_names(queues)
    prefix = f"idle-{uuid.uuid4().hex[:8]}"
    options = fleet_options(names, args.lease_ttl, variant == "schedules")
    env = {
        **os.environ,
        "REDIS_URL": url,
        "THREADMILL_KEY_PREFIX": prefix,
        "THREADMILL_QUEUES": ",".join(dict.fromkeys([*names, *EXAMPLE_QUEUES])),
        "THREADMILL_OPTIONS": json.dumps(options),
    }
    os.environ.update(env)
    from django_threadmill.backend import ThreadmillTaskBackend
    from testproject.example.tasks import echo

    backend = ThreadmillTaskBackend(
        "default",
        {
            "LOCATION": url,
            "QUEUES": list(dict.fromkeys([*names, *EXAMPLE_QUEUES])),
            "OPTIONS": {"key_prefix": prefix, **options},
        },
    )
    for n, name in enumerate(names):
        if n % 13 == 12:
            backend.broker.pause(name, "idle_costs probe")
    reap = ["--reap-interval", "0"] if variant == "no-reap" else []
    if args.reap_interval is not None and variant != "no-reap":
        reap = ["--reap-interval", str(args.reap_interval)]
    command = [
        sys.executable, "manage.py", "threadmill_worker", "--processes", str(processes),
        "--threads", "1", "-v", "0", *reap, *(f"--queue={name}" for name in names),
    ]  # fmt: skip
    worker = subprocess.Popen(command, cwd=ROOT, env=env)
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        last = names[-1]
        pickup_ms = [pickup(backend, echo.using(queue_name=last))]  # up and serving
        if variant == "after-tasks":
            for n, name in enumerate(names):
                if n % 13 != 12:
                    pickup(backend, echo.using(queue_name=name))
        time.sleep(args.warm_up)
        supervisor = psutil.Process(worker.pid)
        tree = [supervisor, *supervisor.children(recursive=True)]
        before, cpu_before, started = snapshot(client), cpu_s(tree), time.monotonic()
        time.sleep(args.seconds)
        after, cpu_after = snapshot(client), cpu_s(tree)
        elapsed = time.monotonic() - started
        cost = cost_between(before, after, {})
        for _ in range(args.samples):
            time.sleep(0.5)  # the worker blocks idle again, as in the night
            pickup_ms.append(pickup(backend, echo.using(queue_name=last)))
    finally:
        worker.terminate()
        worker.wait(60)
        client.close()
    return Row(
        queues=queues,
        processes=processes,
        variant=variant,
        commands_per_s=cost.commands / elapsed,
        scripts_per_s=cost.script_calls / elapsed,
        cpu_ms_per_s=1000 * (cpu_after - cpu_before) / elapsed,
        redis_cpu_ms_per_s=1000 * cost.cpu_s / elapsed,
        top=cost.top_commands,
        pickup_ms=pickup_ms[1:],
    )


def pickup(backend: "ThreadmillTaskBackend", task: "Task") -> float:
    """Enqueue ``task`` and wait for its result; return enqueue-to-start in ms."""
    task_id = backend.enqueue(task, ["x"], {}).id
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        result = backend.get_result(task_id)
        if result.finished_at is not None:
            return (result.started_at - result.enqueued_at).total_seconds() * 1000
        time.sleep(0.002)
    raise RuntimeError(f"task {task_id} did not finish within 30 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queues", default="1,10,50,200", help="queue counts, comma-separated")
    parser.add_argument("--processes", default="1,4", help="worker processes, comma-separated")
    parser.add_argument("--variants", default=",".join(VARIANTS), help=", ".join(VARIANTS))
    parser.add_argument("--seconds", type=float, default=60.0, help="idle window per row")
    parser.add_argument("--warm-up", type=float, default=3.0)
    parser.add_argument("--lease-ttl", type=float, default=60.0, help="OPTIONS['lease_ttl']")
    parser.add_argument("--reap-interval", type=float, default=None)
    parser.add_argument("--samples", type=int, default=10, help="pickups timed per row")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    most = max(map(int, args.queues.split(",")))
    os.environ["THREADMILL_QUEUES"] = ",".join(queue_names(max(most, 3)))  # using() validates
    with redis_process("--appendonly", "no") as server:
        os.environ["REDIS_URL"] = server.url
        import django

        django.setup()
        print(
            f"idle {args.seconds:g} s per row, lease_ttl {args.lease_ttl:g} s, --threads 1; "
            "per second: Redis commands (script calls), worker CPU ms (supervisor + processes), "
            "Redis CPU ms; pickup = enqueue to start into an idle queue, p50 / max ms"
        )
        header = f"{'queues':>6} {'proc':>4} {'variant':<12}"
        print(header + f"{'cmds/s':>9} {'scripts/s':>9} {'cpu ms/s':>9} {'redis ms/s':>10}"
              f" {'pickup p50/max':>15}  busiest")  # fmt: skip
        for queues in map(int, args.queues.split(",")):
            for processes in map(int, args.processes.split(",")):
                for variant in args.variants.split(","):
                    row = run_row(server.url, args, queues, processes, variant)
                    busiest = ", ".join(f"{k}={v}" for k, v in list(row.top.items())[:5])
                    print(
                        f"{row.queues:>6} {row.processes:>4} {row.variant:<12}"
                        f"{row.commands_per_s:>9.1f} {row.scripts_per_s:>9.2f}"
                        f" {row.cpu_ms_per_s:>9.2f} {row.redis_cpu_ms_per_s:>10.2f}"
                        f" {statistics.median(row.pickup_ms):>7.1f} / {max(row.pickup_ms):>5.1f}"
                        f"  {busiest}",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
