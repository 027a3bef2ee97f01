"""The runs of a session, in order: rounds outermost, so machine drift hits every queue alike."""

from dataclasses import dataclass

from ..peers import PEERS, Peer, WorkerSpec, peer_named
from ..peers.threadmill import BASELINE_DIR, FRESH_PROJECT_SETTINGS
from .config import BenchConfig

RTT = "rtt"
# Ours with a project's root console logging at -v 1, beside the main run: a project that logs
# to the console must not lose throughput to it (docs/benchmarks.md, Targets).
FRESH_PROJECT = "fresh project"
# Our ablations: each changes one thing against our 1x1 main run, to show what it is worth.
ABLATIONS: dict[str, WorkerSpec] = {
    "sync-ack": WorkerSpec(threads=1, sync_ack=True),
    "prefetch 1": WorkerSpec(threads=1, prefetch=1),
    "payload 5 KB": WorkerSpec(threads=1, payload_bytes=5 * 1024),
}
# Tasks that sleep 5 ms (time.sleep), at each of config.sleep_thread_counts: I/O-bound work must
# scale with threads (ours: 4 threads at least 3.5x one), and 32 threads must come near the ideal
# rate (threads / 5 ms). dramatiq and django-vtasks beside us from 4 threads up. A row whose ideal
# rate is under 1,000/s (1 and 4 threads) drains the slow task count.
IO_BOUND = "sleep 5 ms"
IO_BOUND_SLEEP_MS = 5
IO_BOUND_PEERS = ("dramatiq", "vtasks")
IO_BOUND_PEER_MIN_THREADS = 4
WIDE_THREADS = 32  # the fixed pool the elastic one is held against
# Ours with an elastic pool (--threads MIN --max-threads MAX): on the sleep tasks, against the
# fixed 32-thread row; on echo tasks, against the fixed --threads 1 row.
ELASTIC_SLEEP = WorkerSpec(threads=2, max_threads=64, task_sleep_ms=IO_BOUND_SLEEP_MS)
ELASTIC_ECHO = WorkerSpec(threads=1, max_threads=64)
# `async def` tasks awaiting asyncio.sleep(0.02), 500 in flight: ours on its event-loop lane
# (--async-concurrency), and on 500 threads while the worker has no lane (each thread runs one
# task on its own loop; skipped once the lane is there); dramatiq's AsyncIO middleware with one
# worker thread per task in flight; django-vtasks' --concurrency. Read-ahead 1,000 where it can
# be set, so 500 can be in flight.
ASYNC = "async 20 ms"
ASYNC_SLEEP_MS = 20
ASYNC_IN_FLIGHT = 500
ASYNC_PREFETCH = 1000
ASYNC_LANE_THREADS = 4


def async_specs(peer: Peer) -> list[WorkerSpec]:
    """The async rows of one peer: which knob gives it ASYNC_IN_FLIGHT tasks in flight."""
    task = {"task_sleep_ms": ASYNC_SLEEP_MS, "async_task": True, "prefetch": ASYNC_PREFETCH}
    if peer.name.startswith("threadmill"):
        return [
            WorkerSpec(threads=ASYNC_LANE_THREADS, async_concurrency=ASYNC_IN_FLIGHT, **task),
            WorkerSpec(threads=ASYNC_IN_FLIGHT, **task),
        ]
    return [WorkerSpec(threads=ASYNC_IN_FLIGHT, **task)]


RTT_PEERS = ("threadmill", "dramatiq")
# Rows with two worker processes, the whole of a 2-core machine: what a second process adds.
PROCESS_PEERS = ("threadmill", "dramatiq")
PROCESSES = 2
# The queues the targets compare us with, one process each: their runs get judged_rounds.
JUDGED_PEERS = ("threadmill", "dramatiq", "vtasks")


@dataclass(frozen=True, slots=True)
class Case:
    """One drain run: a peer, a worker configuration, a variant, a round."""

    round_no: int
    peer: Peer
    spec: WorkerSpec
    variant: str = ""

    def __str__(self) -> str:
        variant = f"-{self.variant.replace(' ', '')}" if self.variant else ""
        return f"r{self.round_no + 1}-{self.peer.name}-{self.spec.config}{variant}"

    @property
    def judged(self) -> bool:
        """Whether a target's ratio is taken from this run (ours in a fresh project and with
        an elastic pool on echo tasks too)."""
        return (
            self.peer.name in JUDGED_PEERS
            and self.spec.processes == 1
            and self.variant in ("", FRESH_PROJECT)
        )

    def task_count(self, config: BenchConfig) -> int:
        if self.variant == RTT:
            return config.rtt_task_count
        ideal = self.spec.ideal_rate
        slow = self.peer.slow or (ideal is not None and ideal < 1000)
        return config.slow_task_count if slow else config.task_count


def our_peers() -> list[Peer]:
    """Ours, and the THREADMILL_BENCH_BASELINE checkout's worker when there is one."""
    return [peer_named("threadmill"), *([peer_named("threadmill-base")] if BASELINE_DIR else [])]


def round_cases(config: BenchConfig, round_no: int) -> list[Case]:
    """Every run of one round: main comparison, elastic echo, fresh project, 2 processes,
    ablations, sleep 5 ms, async 20 ms, rtt."""
    cases = [
        Case(round_no, peer, WorkerSpec(threads=threads))
        for threads in config.thread_counts
        for peer in PEERS
        if peer.max_threads is None or threads <= peer.max_threads
    ]
    threadmill = peer_named("threadmill")
    cases += [Case(round_no, peer, ELASTIC_ECHO) for peer in our_peers()]
    cases += [
        Case(
            round_no,
            threadmill,
            WorkerSpec(threads=threads, settings=FRESH_PROJECT_SETTINGS),
            FRESH_PROJECT,
        )
        for threads in config.thread_counts
    ]
    cases += [
        Case(round_no, peer_named(name), WorkerSpec(threads=threads, processes=PROCESSES))
        for threads in config.thread_counts
        for name in PROCESS_PEERS
    ]
    cases += [Case(round_no, threadmill, spec, name) for name, spec in ABLATIONS.items()]
    cases += [
        Case(round_no, peer, WorkerSpec(threads=threads, task_sleep_ms=IO_BOUND_SLEEP_MS), IO_BOUND)
        for threads in config.sleep_thread_counts
        for peer in [
            *our_peers(),
            *(peer_named(name) for name in IO_BOUND_PEERS if threads >= IO_BOUND_PEER_MIN_THREADS),
        ]
    ]
    cases += [Case(round_no, peer, ELASTIC_SLEEP, IO_BOUND) for peer in our_peers()]
    cases += [
        Case(round_no, peer, spec, ASYNC)
        for peer in [*our_peers(), *(peer_named(name) for name in IO_BOUND_PEERS)]
        for spec in async_specs(peer)
    ]
    cases += [
        Case(round_no, peer_named(name), WorkerSpec(threads=threads), RTT)
        for threads in config.thread_counts
        for name in RTT_PEERS
    ]
    return cases


def all_cases(config: BenchConfig) -> list[Case]:
    """Every run: ``rounds`` rounds of all of them, then the judged runs up to ``judged_rounds``."""
    return [
        case
        for round_no in range(max(config.rounds, config.judged_rounds))
        for case in round_cases(config, round_no)
        if round_no < config.rounds or case.judged
    ]
