"""``manage.py threadmill_worker``: run tasks from a ThreadmillTaskBackend's queues."""

from argparse import ArgumentParser, ArgumentTypeError
from functools import partial
from typing import Any

from django.core.management.base import CommandError

from ...backend import ThreadmillTaskBackend
from ...wording import shown
from ...worker.cpus import default_processes
from ...worker.memory import MIB, ResidentMemory
from ...worker.options import (
    DEFAULT_ASYNC_CONCURRENCY,
    DEFAULT_TARGET_WAIT_S,
    DEFAULT_THREAD_IDLE_S,
    MAX_ASYNC_CONCURRENCY,
    MAX_PREFETCH,
    MAX_PROCESSES,
    MAX_THREADS,
    WorkerOptions,
)
from ...worker.supervisor import Supervisor
from ..backend_option import BACKEND_HELP, backend_option, queues_option
from ..checks_at_start import ChecksAtStart
from ..ending import run_then_exit
from ..int_option import int_option
from ..log_format_option import add_log_format_option
from ..probe_output import ExitCodeCommand
from ..reap_interval import MIN_REAP_INTERVAL_S, check_reap_interval
from ..seconds_option import seconds_option
from ..set_up_frozen import SetUpFrozen

DEFAULT_GRACE_PERIOD_S = 30.0


def _positive(name: str, value: int | None, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if value is None or value < 1:
        raise CommandError(f"{name} must be 1 or more, got {shown(value)}.")


def _at_most(flag: str, value: int | None, ceiling: int, what: str) -> None:
    """Refuse a ``value`` above ``ceiling``, saying what the ceiling counts, the harm and the
    fix (``what``): past it a worker starts, then fails at a system limit or holds too much.
    A ``value`` of thousands of digits is named by its size, where it filled the message."""
    if value is not None and value > ceiling:
        raise CommandError(f"{flag} {shown(value)} is above the ceiling of {ceiling} {what}")


def _mebibytes(text: str) -> int:
    """Return ``--max-memory`` as whole MiB, refusing a unit or a fraction with the number to
    give (argparse's own "invalid int value" said neither)."""
    try:
        return int(text)
    except ValueError:
        raise ArgumentTypeError(
            f"{shown(text)} is not a whole number of MiB. Give the number alone: --max-memory 512 "
            "for 512 MiB, 1024 for 1 GiB."
        ) from None


def _check_max_memory(max_memory_mb: int | None) -> None:
    """Refuse a --max-memory that a process passes before its first task: it would recycle
    after every task."""
    _positive("--max-memory", max_memory_mb, allow_none=True)
    if max_memory_mb is None:
        return
    memory = ResidentMemory()
    try:
        resident_mb = memory.read() / MIB
    finally:
        memory.close()
    if max_memory_mb <= resident_mb:
        raise CommandError(
            f"--max-memory {max_memory_mb} is below the {resident_mb:.0f} MiB this process "
            "holds before running any task: every worker process would recycle after its "
            "first task. Raise it well above that."
        )


def _check_pool_tuning(threads: int, max_threads: int | None, options: dict[str, Any]) -> None:
    """Refuse a --target-wait or --thread-idle that is not more than 0 seconds, or that would
    be ignored: they tune the elastic pool, which only --max-threads above --threads makes."""
    for flag, name, does in (
        ("--target-wait", "target_wait", "how soon the elastic pool grows"),
        ("--thread-idle", "thread_idle", "how soon the elastic pool shrinks"),
    ):
        value = options[name]
        if value is None:
            continue
        if value <= 0:
            raise CommandError(f"{flag} must be more than 0 seconds, got {value:g}.")
        if max_threads is None:
            raise CommandError(
                f"{flag} sets {does}, but without --max-threads the pool stays at --threads "
                f"{threads}. Give --max-threads to let the pool grow, or drop {flag}."
            )
        if max_threads == threads:
            raise CommandError(
                f"{flag} sets {does}, but --max-threads {max_threads} equal to --threads "
                f"{threads} keeps the pool fixed. Raise --max-threads above --threads to let "
                f"the pool grow, or drop {flag}."
            )


class Command(SetUpFrozen, ChecksAtStart, ExitCodeCommand):
    help = (
        "Run tasks from the queues of a ThreadmillTaskBackend: a supervisor with worker "
        "processes, each with a prefetcher, worker threads, an ack writer and a lease keeper."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--backend", default="default", help=BACKEND_HELP)
        parser.add_argument(
            "--queue",
            action="append",
            dest="queues",
            metavar="NAME",
            help="Queue to serve; repeat for several (default: every queue in QUEUES).",
        )
        parser.add_argument(
            "--processes",
            type=int_option,
            help="Worker processes the supervisor keeps running (default: one per CPU this "
            "process may use: its CPU affinity, or fewer under a container's CPU quota, "
            "rounded up); 0 with --burst runs the worker in this process, without forking.",
        )
        parser.add_argument(
            "--threads",
            type=int_option,
            default=1,
            help="Worker threads per process for sync tasks; with --max-threads, the fewest "
            "the pool shrinks to (default: 1).",
        )
        parser.add_argument(
            "--max-threads",
            type=int_option,
            help="Let the pool grow to N threads while tasks wait and every thread is busy "
            "(default: --threads, a fixed pool).",
        )
        parser.add_argument(
            "--target-wait",
            type=seconds_option,
            help=f"With --max-threads: seconds tasks may wait for a busy pool before it grows "
            f"(default: {DEFAULT_TARGET_WAIT_S:g}).",
        )
        parser.add_argument(
            "--thread-idle",
            type=seconds_option,
            help=f"With --max-threads: seconds threads may sit spare (never all busy at once) "
            f"before the pool retires them, down to --threads (default: "
            f"{DEFAULT_THREAD_IDLE_S:g}).",
        )
        parser.add_argument(
            "--async-concurrency",
            type=int_option,
            default=DEFAULT_ASYNC_CONCURRENCY,
            help=f"async def tasks each process runs at once on its event loop (default: "
            f"{DEFAULT_ASYNC_CONCURRENCY}).",
        )
        parser.add_argument(
            "--prefetch",
            type=int_option,
            help="Tasks reserved ahead per process (default: 4 per live thread, plus "
            "--async-concurrency once async tasks come; 1, the fewest, keeps one task waiting).",
        )
        parser.add_argument("--max-tasks", type=int_option, help="Recycle a process after N tasks.")
        parser.add_argument(
            "--max-memory",
            type=_mebibytes,
            metavar="MB",
            help="Recycle a process once its resident memory (RSS) passes MB MiB: it takes no "
            "more tasks, finishes the ones it holds and is replaced.",
        )
        parser.add_argument(
            "--max-tasks-jitter",
            type=int_option,
            default=0,
            help="Add up to N to --max-tasks per process, so processes do not recycle at once.",
        )
        parser.add_argument(
            "--burst", action="store_true", help="Exit 0 once the queues are empty and idle."
        )
        parser.add_argument(
            "--sync-ack",
            action="store_true",
            help="Write each result before the thread takes its next task (strict mode).",
        )
        parser.add_argument(
            "--grace-period",
            type=seconds_option,
            default=DEFAULT_GRACE_PERIOD_S,
            help="Seconds running tasks get to finish after SIGTERM (default: 30).",
        )
        parser.add_argument(
            "--task-timeout",
            type=seconds_option,
            help="Seconds a task may run before it is recorded FAILED (TaskTimeout) and its "
            "thread replaced (default: no limit).",
        )
        parser.add_argument(
            "--reap-interval",
            type=seconds_option,
            help=f"Seconds between the supervisor's reap passes, {MIN_REAP_INTERVAL_S:g} or more "
            "(default: lease_ttl; 0 disables).",
        )
        add_log_format_option(parser)

    def run_from_argv(self, argv: list[str]) -> None:
        """Run as ``manage.py threadmill_worker``, and end the process once the worker stopped,
        without waiting for a thread left behind (a task given up on, with ``--processes 0``; a
        call to a silent Redis cut short by a stop). A forked worker process ends the same way
        (``os._exit``). ``call_command`` is left to return as usual."""
        run_then_exit(partial(super().run_from_argv, argv))

    def handle(self, *args: Any, **options: Any) -> None:
        backend = backend_option(options["backend"])
        worker_options = self._worker_options(backend, options)
        supervisor = Supervisor(worker_options, backend)
        code = supervisor.run() if worker_options.processes else supervisor.run_in_process()
        if code:
            raise CommandError(f"threadmill_worker exited with code {code}.", returncode=code)

    @staticmethod
    def _check_processes(options: dict[str, Any]) -> None:
        processes = options["processes"]
        if processes < 0:
            raise CommandError(f"--processes must be 0 or more, got {shown(processes)}.")
        _at_most(
            "--processes",
            processes,
            MAX_PROCESSES,
            "worker processes per supervisor. Run more supervisors (hosts or containers) instead.",
        )
        if processes:
            return
        if not options["burst"]:
            raise CommandError(
                "--processes 0 runs the worker in this process until the queues are empty: add "
                "--burst. A worker that keeps running needs the supervisor (--processes 1 or "
                "more), which restarts it, reaps leases and fires schedules."
            )
        for flag, name in (("--max-tasks", "max_tasks"), ("--max-memory", "max_memory")):
            if options[name] is not None:
                raise CommandError(
                    f"{flag} recycles a worker process, which --processes 0 has no supervisor "
                    f"to replace. Drop {flag}, or use --processes 1 or more."
                )

    @staticmethod
    def _check_pool(threads: int, options: dict[str, Any]) -> None:
        more = "Use more processes, or async def tasks (--async-concurrency) for many waits."
        _at_most(
            "--threads",
            threads,
            MAX_THREADS,
            "threads per process: each process would start them all at once, past what the "
            f"system lets it run. {more}",
        )
        max_threads = options["max_threads"]
        _at_most(
            "--max-threads",
            max_threads,
            MAX_THREADS,
            "threads per process: the pool would grow until the system refused threads, "
            "leaving none for the process's other threads, its sibling processes or the "
            f"supervisor's forks. {more}",
        )
        if max_threads is not None and max_threads < threads:
            raise CommandError(
                f"--max-threads {max_threads} is below --threads {threads}. The pool floats "
                "between them: raise --max-threads, or drop it for a fixed pool."
            )
        _check_pool_tuning(threads, max_threads, options)

    def _worker_options(
        self, backend: ThreadmillTaskBackend, options: dict[str, Any]
    ) -> WorkerOptions:
        threads, prefetch = options["threads"], options["prefetch"]
        if options["processes"] is None:
            options["processes"] = default_processes()
        self._check_processes(options)
        _positive("--threads", threads)
        _positive("--prefetch", prefetch, allow_none=True)
        _positive("--max-tasks", options["max_tasks"], allow_none=True)
        _check_max_memory(options["max_memory"])
        _positive("--async-concurrency", options["async_concurrency"])
        _at_most(
            "--async-concurrency",
            options["async_concurrency"],
            MAX_ASYNC_CONCURRENCY,
            "async tasks at once per process: its event loop would take that many of the "
            "queues' tasks, each holding its lease, and a crashed process would strand them "
            "all until their leases lapse. Use more processes instead.",
        )
        self._check_pool(threads, options)
        _at_most(
            "--prefetch",
            prefetch,
            MAX_PREFETCH,
            "tasks reserved ahead per process: a crashed process would hold that many tasks "
            "until their leases lapse. Use more processes instead.",
        )
        if options["max_tasks_jitter"] < 0:
            raise CommandError("--max-tasks-jitter must be 0 or more.")
        if options["max_tasks_jitter"] and options["max_tasks"] is None:
            raise CommandError("--max-tasks-jitter needs --max-tasks.")
        if options["task_timeout"] is not None and options["task_timeout"] <= 0:
            raise CommandError("--task-timeout must be more than 0 seconds.")
        if options["grace_period"] < 0:
            raise CommandError("--grace-period must be 0 or more seconds.")
        queues = queues_option(backend, options["queues"])
        reap_interval = options["reap_interval"]
        if reap_interval is None:
            reap_interval = backend.settings.lease_ttl_s
        if reap_interval < 0:
            raise CommandError("--reap-interval must be 0 (off) or more seconds.")
        check_reap_interval(
            "--reap-interval",
            reap_interval,
            f"Use {MIN_REAP_INTERVAL_S:g} or more, or 0 to leave reaping to threadmill_reap.",
        )
        return WorkerOptions(
            backend_alias=backend.alias,
            queues=queues,
            processes=options["processes"],
            threads=threads,
            max_threads=options["max_threads"],
            target_wait_s=_or_default(options["target_wait"], DEFAULT_TARGET_WAIT_S),
            thread_idle_s=_or_default(options["thread_idle"], DEFAULT_THREAD_IDLE_S),
            async_concurrency=options["async_concurrency"],
            prefetch=prefetch,
            max_tasks=options["max_tasks"],
            max_tasks_jitter=options["max_tasks_jitter"],
            max_memory_mb=options["max_memory"],
            burst=options["burst"],
            sync_ack=options["sync_ack"],
            grace_period_s=options["grace_period"],
            task_timeout_s=options["task_timeout"],
            reap_interval_s=reap_interval,
        )


def _or_default(given: float | None, default: float) -> float:
    """Return an option's value, or its default where it was not given."""
    return default if given is None else given
