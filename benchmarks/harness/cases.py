"""The runs of a session, in order: rounds outermost, so machine drift hits every queue alike."""

from dataclasses import dataclass

from ..peers import PEERS, Peer, WorkerSpec, peer_named
from ..peers.threadmill import FRESH_PROJECT_SETTINGS
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
# Ours on tasks that sleep 5 ms, at each thread count: I/O-bound work must scale with threads
# (4 threads at least 3.5x one). They drain at a few hundred per second: the slow task count.
IO_BOUND = "sleep 5 ms"
IO_BOUND_SLEEP_MS = 5
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
        """Whether a target's ratio is taken from this run (ours in a fresh project too)."""
        return (
            self.peer.name in JUDGED_PEERS
            and self.spec.processes == 1
            and self.variant in ("", FRESH_PROJECT)
        )

    def task_count(self, config: BenchConfig) -> int:
        if self.variant == RTT:
            return config.rtt_task_count
        slow = self.peer.slow or self.variant == IO_BOUND
        return config.slow_task_count if slow else config.task_count


def round_cases(config: BenchConfig, round_no: int) -> list[Case]:
    """Every run of one round: main comparison, fresh project, 2 processes, ablations, rtt."""
    cases = [
        Case(round_no, peer, WorkerSpec(threads=threads))
        for threads in config.thread_counts
        for peer in PEERS
        if peer.max_threads is None or threads <= peer.max_threads
    ]
    threadmill = peer_named("threadmill")
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
        Case(
            round_no,
            threadmill,
            WorkerSpec(threads=threads, task_sleep_ms=IO_BOUND_SLEEP_MS),
            IO_BOUND,
        )
        for threads in config.thread_counts
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
