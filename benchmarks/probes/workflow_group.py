"""Measure what launching and cancelling a large group costs (seconds, round trips, commands).

Run ``python -m benchmarks.probes.workflow_group [--members 10000 30000]`` from the repository
root. It uses ``REDIS_URL`` or starts a throwaway redis-server, then for each size enqueues a
group of that many ``echo`` steps with a callback, and cancels it: every member still waits in
its queue, so the cancel stops each one, and drains the queue's outbox of the steps that
ended, as a worker's drainer does. Each line gives the wall time of the call, the Redis CPU it
took (INFO cpu), the round trips the client sent (one per command or pipeline), the commands
Redis ran (INFO commandstats, those scripts ran included) and the longest single command Redis
ran (INFO latencystats is not everywhere: ``SLOWLOG`` with a 0 µs threshold). ``--profile``
prints the heaviest functions of each call (cProfile). Keys are deleted afterwards.
"""

import argparse
import cProfile
import pstats
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import redis
from redis.connection import AbstractConnection

from benchmarks.harness.redis_stats import cost_between, snapshot
from benchmarks.probes.project import probe_project


@contextmanager
def counted_round_trips() -> Iterator[list[int]]:
    """Count what the clients write to Redis: one write per command or per pipeline."""
    writes: list[int] = []
    send = AbstractConnection.send_packed_command

    def counted(self: AbstractConnection, command: Any, check_health: bool = True) -> None:
        writes.append(1)
        send(self, command, check_health)

    AbstractConnection.send_packed_command = counted  # type: ignore[method-assign]
    try:
        yield writes
    finally:
        AbstractConnection.send_packed_command = send  # type: ignore[method-assign]


def longest_command(client: redis.Redis) -> str:
    """The longest command the slow log holds (every command is logged: threshold 0): its
    duration and name (a script's name is its first key, which names its queue or workflow)."""
    own = (b"SLOWLOG", b"INFO", b"CONFIG")  # the probe's own reads of the counters
    entries = [e for e in client.slowlog_get(-1) if not e["command"].startswith(own)]
    if not entries:
        return "none"
    entry = max(entries, key=lambda e: int(e["duration"]))
    command = entry["command"].split()
    return f"{int(entry['duration'])} µs ({' '.join(map(str, command[:1] + command[3:4]))})"


def measure(client: redis.Redis, name: str, call: Callable[[], object], profile: bool) -> object:
    """Run ``call``; print its wall time, round trips, Redis commands and longest command."""
    client.slowlog_reset()
    before = snapshot(client)
    profiler = cProfile.Profile() if profile else None
    with counted_round_trips() as writes:
        started = time.perf_counter()
        if profiler:
            profiler.enable()
        answer = call()
        if profiler:
            profiler.disable()
        seconds = time.perf_counter() - started
    cost = cost_between(before, snapshot(client), {})
    print(
        f"  {name}: {seconds:.2f} s, {cost.cpu_s:.2f} s of Redis CPU, {len(writes)} round trips, "
        f"{cost.commands} Redis commands "
        f"({cost.script_calls} script calls), longest command {longest_command(client)}, "
        f"busiest {cost.top_commands}"
    )
    if profiler:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(18)
    return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[10_000, 30_000])
    parser.add_argument("--profile", action="store_true", help="print cProfile's heaviest calls")
    args = parser.parse_args()

    with probe_project("groupbench") as stack:
        from django_threadmill.compat import task_backends
        from django_threadmill.testing import flush
        from django_threadmill.workflows import group, step
        from django_threadmill.workflows.advance import drain_queues
        from testproject.example.tasks import echo

        backend: Any = task_backends["default"]
        client = backend.broker.client
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 1_000_000)
        stack.callback(client.config_set, "slowlog-log-slower-than", 10_000)
        stack.callback(client.config_set, "slowlog-max-len", 128)
        for members in args.members:
            flush()
            print(f"group of {members} members and a callback:")
            flow = group(*(step(echo, n) for n in range(members)), then=step(echo))
            result: Any = measure(client, "launch", flow.enqueue, args.profile)
            measure(client, "cancel", partial(result.cancel, "probe"), args.profile)
            measure(client, "drain", partial(drain_queues, backend, ["default"]), args.profile)


if __name__ == "__main__":
    main()
