"""What a benchmark session records: one flat record per run, summarised per configuration."""

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from ..peers import WorkerSpec
from .runner import Drain


@dataclass(frozen=True, slots=True, kw_only=True)
class DrainRecord:
    """One drain run, reduced to per-task figures."""

    peer: str
    label: str
    threads: int
    processes: int = 1  # results written before worker processes were recorded had one
    max_threads: int | None = None  # ours with an elastic pool (--max-threads)
    async_concurrency: int | None = None  # ours with an async lane (--async-concurrency)
    variant: str  # "" for the main comparison, else the ablation, "fresh project", "rtt",
    # "sleep 5 ms" or "async 20 ms"
    round: int
    tasks: int
    rate: float  # tasks / seconds from worker spawn to the last result stored
    marginal_rate: float  # after the first mark_count results
    enqueue_rate: float  # pre-enqueue, the peer's bulk path
    startup_s: float  # worker spawn to the first result seen
    rss_first_mb: float | None  # worker tree memory at the mark
    rss_late_mb: float | None  # at 90% of the results
    rss_peak_mb: float | None = None  # the highest of the samples taken at every poll
    ideal_rate: float | None = None  # tasks in flight / the task's wait, for tasks that wait
    worker_cpu_us: float  # worker tree CPU per task after the mark (shutdown included)
    redis_cpu_us: float  # Redis server CPU per task, whole window
    worker_cpu_total_us: float | None = None  # worker tree CPU per task, spawn to exit
    commands: float  # Redis commands per task, calls inside scripts included
    script_calls: float  # EVAL/EVALSHA per task
    round_trips: float | None  # client writes per task, counted by the delay proxy
    top_commands: dict[str, float] = field(default_factory=dict)

    @property
    def key(self) -> "RowKey":
        return row_of(self)


# One row of the table: peer, processes, threads, max threads, async lane, variant.
RowKey = tuple[str, int, int, int | None, int | None, str]


def row(
    peer: str,
    threads: int,
    variant: str = "",
    processes: int = 1,
    max_threads: int | None = None,
    async_concurrency: int | None = None,
) -> RowKey:
    """The key of one row of the table."""
    return (peer, processes, threads, max_threads, async_concurrency, variant)


def row_of(run: "DrainRecord | Summary") -> RowKey:
    """The key of the row a run or a summary belongs to."""
    return row(
        run.peer, run.threads, run.variant, run.processes, run.max_threads, run.async_concurrency
    )


def per_task(value: float, tasks: int) -> float:
    return value / tasks if tasks else 0.0


def record_drain(
    peer: str,
    label: str,
    spec: WorkerSpec,
    variant: str,
    round_no: int,
    drain: Drain,
    enqueue_s: float,
) -> DrainRecord:
    """Reduce one Drain to a DrainRecord."""
    assert drain.first is not None, "the watcher never reached the mark"
    assert drain.last is not None, "the watcher never saw every result"
    assert drain.redis is not None, "the run has no Redis costs"
    marginal_tasks = drain.last.done - drain.first.done
    marginal_s = drain.last.at_s - drain.first.at_s
    after_mark_cpu = drain.worker_cpu_s - drain.first.worker_cpu_s
    if marginal_tasks < drain.tasks // 4:  # a tiny run finished within a poll or two
        marginal_tasks, marginal_s, after_mark_cpu = (
            drain.tasks,
            drain.last.at_s,
            drain.worker_cpu_s,
        )
    return DrainRecord(
        peer=peer,
        label=label,
        threads=spec.threads,
        processes=spec.processes,
        max_threads=spec.max_threads,
        async_concurrency=spec.async_concurrency,
        variant=variant,
        round=round_no,
        tasks=drain.tasks,
        rate=drain.tasks / drain.last.at_s,
        marginal_rate=marginal_tasks / marginal_s if marginal_s > 0 else 0.0,
        enqueue_rate=drain.tasks / enqueue_s if enqueue_s > 0 else 0.0,
        startup_s=drain.started_s or 0.0,
        rss_first_mb=drain.first.rss_mb,
        rss_late_mb=drain.late_rss_mb,
        rss_peak_mb=drain.peak_rss_mb,
        ideal_rate=spec.ideal_rate,
        worker_cpu_us=1e6 * per_task(after_mark_cpu, max(marginal_tasks, 1)),
        worker_cpu_total_us=1e6 * per_task(drain.worker_cpu_s, drain.tasks),
        redis_cpu_us=1e6 * per_task(drain.redis.cpu_s, drain.tasks),
        commands=per_task(drain.redis.commands, drain.tasks),
        script_calls=per_task(drain.redis.script_calls, drain.tasks),
        round_trips=None if drain.round_trips is None else per_task(drain.round_trips, drain.tasks),
        top_commands={
            name: per_task(calls, drain.tasks) for name, calls in drain.redis.top_commands.items()
        },
    )


@dataclass(frozen=True, slots=True)
class Spread:
    """Median and range of one figure over the rounds."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> "Spread":
        return cls(statistics.median(values), min(values), max(values))


@dataclass(frozen=True, slots=True, kw_only=True)
class Summary:
    """One configuration over its rounds."""

    peer: str
    label: str
    threads: int
    processes: int
    variant: str
    tasks: int
    rounds: int
    figures: dict[str, Spread]  # each numeric DrainRecord field, by name
    top_commands: dict[str, float]  # from the median round
    max_threads: int | None = None
    async_concurrency: int | None = None
    ideal_rate: float | None = None

    def __getitem__(self, name: str) -> float:
        return self.figures[name].median

    @property
    def key(self) -> RowKey:
        return row_of(self)

    @property
    def in_flight(self) -> int:
        """Tasks the row can have running at once: the lane, else the most threads."""
        return self.async_concurrency or self.max_threads or self.threads


FIGURES = (
    "rate",
    "marginal_rate",
    "enqueue_rate",
    "startup_s",
    "rss_first_mb",
    "rss_late_mb",
    "rss_peak_mb",
    "worker_cpu_us",
    "worker_cpu_total_us",
    "redis_cpu_us",
    "commands",
    "script_calls",
    "round_trips",
)


def summarise(records: list[DrainRecord]) -> list[Summary]:
    """Group records by (peer, processes, threads, variant), in first-seen order."""
    groups: dict[RowKey, list[DrainRecord]] = defaultdict(list)
    for record in records:
        groups[record.key].append(record)
    summaries = []
    for runs in groups.values():
        figures = {}
        for name in FIGURES:
            values = [getattr(run, name) for run in runs if getattr(run, name) is not None]
            if values:
                figures[name] = Spread.of(values)
        middle = sorted(runs, key=lambda run: run.rate)[len(runs) // 2]
        first = runs[0]
        summaries.append(
            Summary(
                peer=first.peer,
                label=first.label,
                threads=first.threads,
                processes=first.processes,
                variant=first.variant,
                tasks=first.tasks,
                rounds=len(runs),
                figures=figures,
                top_commands=middle.top_commands,
                max_threads=first.max_threads,
                async_concurrency=first.async_concurrency,
                ideal_rate=first.ideal_rate,
            )
        )
    return summaries


@dataclass(frozen=True, slots=True, kw_only=True)
class LatencyRecord:
    """A latency distribution of one peer (pickup, or single enqueue), in milliseconds."""

    peer: str
    label: str
    kind: str  # "pickup" or "enqueue"
    count: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    @classmethod
    def of(cls, peer: str, label: str, kind: str, latencies_s: list[float]) -> "LatencyRecord":
        ordered = sorted(1000 * value for value in latencies_s)
        p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
        return cls(
            peer=peer,
            label=label,
            kind=kind,
            count=len(ordered),
            p50_ms=statistics.median(ordered),
            p99_ms=p99,
            max_ms=ordered[-1],
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class BurstRecord:
    """One burst of enqueues from one client process."""

    peer: str
    label: str
    style: str  # "async": concurrent aenqueue in one event loop; "threads": enqueue per thread
    variant: str  # "coalesced" (the product) or "plain" (one call per task)
    round: int
    tasks: int
    rate: float  # tasks / seconds of the whole burst
    errors: int  # calls that raised
    script_calls: float  # EVAL/EVALSHA per task: an upper bound on round trips per task
    redis_cpu_us: float  # Redis server CPU per task
