"""Measure what each hot-path step costs Redis, per task: commands and server CPU.

Run ``python -m benchmarks.probes.core_costs`` from the repository root. It starts a throwaway
redis-server (the first on PATH), enqueues ``--tasks`` echo tasks one ``enqueue()`` at a time,
acquires them in batches of ``--batch``, sends start notices and success acks in batches of the
same size (the acks' phase ends with the metrics send that indexes them), and prints, per
phase, the deltas of ``INFO commandstats`` and ``INFO cpu`` (used_cpu_sys + used_cpu_user)
divided by the number of tasks. Commands counted include those run inside Lua scripts; "script
calls" are the EVALSHA round trips the client made.

With ``--instructions`` the server runs under valgrind's callgrind and each phase also reports
the instructions Redis executed per task: a figure the machine's load does not move, for
comparing two versions of a script (``--tasks 2000``: the server runs far slower).
"""

import argparse
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.harness.redis_instructions import callgrind_redis
from benchmarks.harness.redis_stats import RedisCost, cost_between, server_version, snapshot
from django_threadmill.broker import Broker, Finish, Lease, Outcome, Start
from django_threadmill.codec.jsoncodec import dumps
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import Task
from tests.servers.redis_server import redis_process

WORKER = "core-costs-worker"


@dataclass(frozen=True, slots=True)
class Phase:
    """One measured step of the task life cycle."""

    name: str
    cost: RedisCost
    wall_s: float
    instructions: int | None = None  # executed by the server, under --instructions only


type Counter = Callable[[Callable[[], None]], int | None]  # runs work, returns instructions


def uncounted(work: Callable[[], None]) -> None:
    work()


def measure(client: redis.Redis, name: str, work: Callable[[], None], counted: Counter) -> Phase:
    """Run ``work`` between two INFO snapshots and return what it cost the server."""
    before = snapshot(client)
    started = time.perf_counter()
    instructions = counted(work)
    wall_s = time.perf_counter() - started
    return Phase(name, cost_between(before, snapshot(client), {}), wall_s, instructions)


def run_phases(client: redis.Redis, counted: Counter, tasks: int, batch: int) -> list[Phase]:
    """Enqueue, acquire, start and ack ``tasks`` echo tasks; measure each phase.

    Then ack the bulk-enqueued tasks without start notices, as a busy worker does.
    """
    from django_threadmill.compat import task_backends
    from testproject.example.tasks import echo

    backend = task_backends["default"]
    broker = backend.broker
    bulk_task = echo.using(queue_name="reports")
    leases: list[Lease] = []

    def enqueue() -> None:
        for n in range(tasks):
            echo.enqueue(n)

    bulk_leases: list[Lease] = []

    def reserve(queue: str, into: list[Lease]) -> None:
        while len(into) < tasks:
            reservations = broker.acquire(queue, batch).reservations
            assert reservations, "acquire returned nothing before every task was reserved"
            into.extend(r.lease for r in reservations)

    def start() -> None:
        for first in range(0, tasks, batch):
            notices = [Start(lease=lease, started_ms=now_ms()) for lease in leases[first:][:batch]]
            assert broker.start(WORKER, notices) == []

    def ack(acked: list[Lease]) -> None:
        for first in range(0, tasks, batch):
            done = [success(lease, n) for n, lease in enumerate(acked[first:][:batch], first)]
            assert broker.finish(WORKER, done) == []
        broker.send_metrics()  # the done index and counters: the ack writer's once-a-second send

    def enqueue_many() -> None:
        # Another queue, so the next repetition's acquire finds only its own tasks.
        backend.enqueue_many(bulk_task, (((n,), {}) for n in range(tasks)))

    warm_up(broker, echo)
    phases = [
        measure(client, "enqueue", enqueue, counted),
        measure(client, "acquire", lambda: reserve("default", leases), counted),
        measure(client, "start", start, counted),
        measure(client, "ack", lambda: ack(leases), counted),
        measure(client, "enqueue_many", enqueue_many, counted),
    ]
    # What a busy worker does: its start notices are elided, so finish meets RESERVED records.
    reserve("reports", bulk_leases)
    phases.append(measure(client, "ack, no start", lambda: ack(bulk_leases), counted))
    return phases


def medians(runs: list[list[Phase]]) -> list[Phase]:
    """Return each phase with the median CPU, wall time and instructions over ``runs``."""
    merged = []
    for same_phase in zip(*runs, strict=True):
        last = same_phase[-1]
        cost = replace(last.cost, cpu_s=statistics.median(p.cost.cpu_s for p in same_phase))
        counts = [p.instructions for p in same_phase if p.instructions is not None]
        instructions = round(statistics.median(counts)) if counts else None
        wall_s = statistics.median(p.wall_s for p in same_phase)
        merged.append(Phase(last.name, cost, wall_s, instructions))
    return merged


def success(lease: Lease, value: object) -> Finish:
    return Finish(
        lease=lease,
        outcome=Outcome.SUCCESSFUL,
        value=dumps(value),
        started_ms=now_ms(),
        finished_ms=now_ms(),
    )


def warm_up(broker: Broker, echo: Task) -> None:
    """Register the queue and load every script used, so no phase pays for that."""
    echo.enqueue("warm-up")
    [reservation] = broker.acquire("default", 1).reservations
    assert broker.start(WORKER, [Start(lease=reservation.lease, started_ms=now_ms())]) == []
    assert broker.finish(WORKER, [success(reservation.lease, None)]) == []
    broker.send_metrics()


def report(phases: list[Phase], tasks: int, batch: int, version: str) -> str:
    """Return the per-task table, with start+ack (the ack writer's two calls) after ack."""
    start, ack = phases[2], phases[3]
    both = None
    if start.instructions is not None and ack.instructions is not None:
        both = start.instructions + ack.instructions
    combined = Phase(
        "start+ack",
        RedisCost(
            commands=start.cost.commands + ack.cost.commands,
            script_calls=start.cost.script_calls + ack.cost.script_calls,
            cpu_s=start.cost.cpu_s + ack.cost.cpu_s,
            top_commands={},
        ),
        start.wall_s + ack.wall_s,
        both,
    )
    counted = start.instructions is not None
    lines = [
        f"Redis {version}, {tasks} tasks, batches of {batch} (per task; CPU = sys + user)",
        f"{'phase':<16}{'commands':>10}{'script calls':>14}{'CPU µs':>10}{'client tasks/s':>16}"
        + (f"{'instructions':>14}" if counted else ""),
    ]
    for phase in phases:
        lines.append(row(phase, tasks))
        if phase is ack:
            lines.append(row(combined, tasks))
    lines.append("busiest commands per phase:")
    for phase in phases:
        busiest = ", ".join(f"{name}={count}" for name, count in phase.cost.top_commands.items())
        lines.append(f"  {phase.name}: {busiest}")
    return "\n".join(lines)


def row(phase: Phase, tasks: int) -> str:
    cost = phase.cost
    text = (
        f"{phase.name:<16}{cost.commands / tasks:>10.2f}{cost.script_calls / tasks:>14.4f}"
        f"{cost.cpu_s * 1e6 / tasks:>10.2f}{tasks / phase.wall_s:>16.0f}"
    )
    if phase.instructions is not None:
        text += f"{phase.instructions / tasks:>14,.0f}"
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="tasks per phase")
    parser.add_argument("--batch", type=int, default=128, help="acquire/start/ack batch size")
    parser.add_argument("--repeat", type=int, default=3, help="runs; CPU and wall are medians")
    parser.add_argument(
        "--redis-arg",
        action="append",
        default=[],
        help="extra redis-server argument, e.g. --redis-arg=--appendonly --redis-arg=yes",
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="run Redis under valgrind's callgrind and count its instructions per task",
    )
    options = parser.parse_args()
    server_args = ("--appendonly", "no", *options.redis_arg)
    if options.instructions:
        with callgrind_redis(*server_args) as counting_server:
            print(run_all(counting_server.url, counting_server.count, options))
    else:
        with redis_process(*server_args) as server:
            print(run_all(server.url, uncounted, options))
    print(f"(median of {options.repeat} runs; commands do not vary between runs)")


def run_all(url: str, counted: Counter, options: argparse.Namespace) -> str:
    """Run every phase ``options.repeat`` times against the server at ``url``; the report."""
    os.environ["REDIS_URL"] = url
    os.environ["THREADMILL_KEY_PREFIX"] = f"tmcost-{uuid.uuid4().hex[:8]}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "testproject.settings")
    import django

    django.setup()
    client = redis.Redis.from_url(url, decode_responses=True)
    runs = [
        run_phases(client, counted, options.tasks, options.batch) for _ in range(options.repeat)
    ]
    version = server_version(client)
    client.close()
    return report(medians(runs), options.tasks, options.batch, version)


if __name__ == "__main__":
    main()
