"""The settings one worker process runs with, validated once at the command edge."""

from dataclasses import dataclass

MAX_PREFETCH = 10_000  # tasks one process may hold unstarted; above this a crash strands too much
EXIT_OK = 0
EXIT_FORCED = 1  # a second signal, or threads that would not stop within the grace period
EXIT_RECYCLE = 3  # --max-tasks reached: the supervisor starts a fresh process at once
EXIT_REFUSED = 4  # Redis refused the credentials or ACL rights: restarting cannot help


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
