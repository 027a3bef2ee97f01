"""Where our worker's time goes: py-spy over one drain, plus Redis time per command.

    .venv-bench/bin/python -m benchmarks.probes.profile_worker [--tasks 40000] [--threads 1]
        [--task-sleep-ms 0] [--async-concurrency 500 --prefetch 1000]
        [--settings testproject.settings_fresh]

Pre-enqueues echo tasks (or tasks that sleep first; `async def` ones awaiting the sleep with
--async-concurrency, run on the event loop lane), runs `threadmill_worker --burst` under
`py-spy record --subprocesses`, and prints busy samples per thread role, the heaviest frames of
the worker threads, the requests Redis read per task (INFO stats: one per round trip, however
many commands it carries) beside its CPU per task, and Redis' own microseconds per task for each
command (INFO commandstats).
"""

import argparse
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import redis

from tests.servers.redis_server import redis_process

from ..harness.redis_stats import snapshot
from ..harness.runner import stage
from ..peers import RunContext, WorkerSpec, peer_named

# Leaf frames where a thread waits rather than works (lock, queue, socket).
IDLE_LEAVES = ("wait (threading", "read_from_socket", "select (", "_socket_can_read", "sleep")
# Each role's RoleThread.run calls its loop(); the first two run tasks.
ROLES = (
    "WorkerThread.loop",
    "EventLoopLane.loop",
    "Prefetcher.loop",
    "AckWriter.loop",
    "LeaseKeeper.loop",
    "Watchdog.loop",
)


def python_frame(frame: str) -> bool:
    """Tell a frame of Python code (``name (file:line)``) from py-spy's process line."""
    return frame.endswith(")") and not frame.startswith("process ")


def parse_folded(path: Path) -> tuple[Counter[str], Counter[str], int]:
    """Busy samples per thread role, inclusive busy samples per frame where tasks run."""
    roles: Counter[str] = Counter()
    frames: Counter[str] = Counter()
    busy = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        count, stack_frames = int(count_text), stack.split(";")
        # A stack with no Python frame (a thread inside C code py-spy cannot read) is idle too.
        if any(leaf in stack_frames[-1] for leaf in IDLE_LEAVES) or not python_frame(
            stack_frames[-1]
        ):
            continue
        busy += count
        role = next((r for f in stack_frames for r in ROLES if f.startswith(r)), "other")
        roles[role] += count
        if role in ROLES[:2]:
            for frame in set(stack_frames):
                frames[frame] += count
    return roles, frames, busy


def round_trip_line(client: redis.Redis, tasks: int, cpu_before_s: float) -> str:
    """Requests Redis read (zeroed by CONFIG RESETSTAT) and its CPU since ``cpu_before_s``, per
    task: a request that finds Redis asleep costs it a wake-up besides its commands."""
    reads = int(client.info("stats")["total_reads_processed"])
    cpu_us = (snapshot(client).cpu_s - cpu_before_s) * 1e6
    return f"Redis per task: {reads / tasks:.3f} requests read, {cpu_us / tasks:.1f} µs of CPU"


def redis_lines(client: redis.Redis, tasks: int) -> list[str]:
    stats = client.info("commandstats")
    rows = sorted(
        ((name.removeprefix("cmdstat_"), value) for name, value in stats.items()),
        key=lambda item: -int(item[1]["usec"]),
    )
    lines = [f"{'command':<22}{'calls/task':>11}{'us/call':>9}{'us/task':>9}"]
    for name, value in rows[:12]:
        calls, usec = int(value["calls"]), int(value["usec"])
        lines.append(f"{name:<22}{calls / tasks:>11.3f}{usec / calls:>9.2f}{usec / tasks:>9.2f}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=40_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--task-sleep-ms", type=int, default=0, help="each task waits first")
    parser.add_argument(
        "--async-concurrency", type=int, help="async tasks, this many at once on the loop lane"
    )
    parser.add_argument("--prefetch", type=int, help="the worker's --prefetch (default: its own)")
    parser.add_argument("--rate", type=int, default=200, help="py-spy samples per second")
    parser.add_argument(
        "--gil",
        action="store_true",
        help="sample only the thread holding the GIL: where the CPU goes when threads contend",
    )
    parser.add_argument("--settings", help="the worker's settings module (default: testproject's)")
    options = parser.parse_args()
    beside = Path(sys.executable).with_name("py-spy")  # the venv's, when it is not on PATH
    py_spy = str(beside) if beside.exists() else shutil.which("py-spy")
    if py_spy is None:
        raise SystemExit("py-spy is not installed: pip install py-spy (it is in the bench extra).")
    peer = peer_named("threadmill")
    spec = WorkerSpec(
        threads=options.threads,
        task_sleep_ms=options.task_sleep_ms,
        settings=options.settings,
        async_task=options.async_concurrency is not None,
        async_concurrency=options.async_concurrency,
        **({"prefetch": options.prefetch} if options.prefetch else {}),
    )
    with redis_process("--appendonly", "no") as server, tempfile.TemporaryDirectory() as tmp:
        context = RunContext(redis_url=server.url, direct_redis_url=server.url, workdir=Path(tmp))
        stage(peer, spec, context, options.tasks)
        client = redis.Redis.from_url(server.url)
        client.config_resetstat()
        cpu_before_s = snapshot(client).cpu_s
        folded = Path(tmp) / "worker.folded"
        record = [py_spy, "record", "--subprocesses", "--format", "raw", "--nonblocking"]
        record += ["--gil"] if options.gil else []
        argv = [*record, "--rate", str(options.rate), "-o", str(folded), "--"]
        subprocess.run([*argv, *peer.worker_argv(spec)], env=peer.process_env(context), check=True)
        roles, frames, busy = parse_folded(folded)
        print(f"busy samples: {busy} at {options.rate}/s")
        for role, count in roles.most_common():
            print(f"  {role:<20}{count:>7} ({100 * count / busy:.0f}%)")
        worker_total = sum(roles[role] for role in ROLES[:2]) or 1
        print("task runners (worker threads, event loop), inclusive:")
        for frame, count in frames.most_common(30):
            print(f"  {100 * count / worker_total:5.1f}%  {frame[:110]}")
        print(round_trip_line(client, options.tasks, cpu_before_s))
        print("\n".join(redis_lines(client, options.tasks)))


if __name__ == "__main__":
    main()
