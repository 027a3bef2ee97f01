"""The settings one worker process runs with, validated once at the command edge."""

from dataclasses import dataclass

MAX_PREFETCH = 10_000  # tasks one process may hold unstarted; above this a crash strands too much


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerOptions:
    """What ``threadmill_worker`` was asked to do, shared by the supervisor and its processes."""

    backend_alias: str
    queues: tuple[str, ...]
    processes: int
    threads: int
    prefetch: int
    max_tasks: int | None
    max_tasks_jitter: int
    burst: bool
    sync_ack: bool
    grace_period_s: float
    task_timeout_s: float | None
    reap_interval_s: float | None
