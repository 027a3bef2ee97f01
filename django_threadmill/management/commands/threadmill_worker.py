"""``manage.py threadmill_worker``: run tasks from a ThreadmillTaskBackend's queues."""

import os
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from ...backend import ThreadmillTaskBackend
from ...checks import redis_may_be_down
from ...conf.settings import check_queue_name
from ...exceptions import ImproperlyConfiguredThreadmill
from ...worker.logs import configure_logging
from ...worker.options import MAX_PREFETCH, WorkerOptions
from ...worker.supervisor import Supervisor
from ..backend_option import BACKEND_HELP, backend_option

DEFAULT_GRACE_PERIOD_S = 30.0


def _positive(name: str, value: int | None, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if value is None or value < 1:
        raise CommandError(f"{name} must be 1 or more, got {value}.")


class Command(BaseCommand):
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
        parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)
        parser.add_argument("--threads", type=int, default=1, help="Worker threads per process.")
        parser.add_argument(
            "--prefetch",
            type=int,
            help="Tasks reserved ahead per process (default: 4 x threads; 1 disables read-ahead).",
        )
        parser.add_argument("--max-tasks", type=int, help="Recycle a process after N tasks.")
        parser.add_argument(
            "--max-tasks-jitter",
            type=int,
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
            type=float,
            default=DEFAULT_GRACE_PERIOD_S,
            help="Seconds running tasks get to finish after SIGTERM (default: 30).",
        )
        parser.add_argument(
            "--task-timeout",
            type=float,
            help="Seconds a task may run before it is recorded FAILED (TaskTimeout) and its "
            "thread replaced (default: no limit).",
        )
        parser.add_argument(
            "--reap-interval",
            type=float,
            help="Seconds between the supervisor's reap passes (default: lease_ttl; 0 disables).",
        )
        parser.add_argument("--log-format", choices=["text", "json"], default="text")

    def check(self, *args: Any, **kwargs: Any) -> None:
        """Run the system checks, except "Redis unreachable": every process waits for Redis."""
        with redis_may_be_down():
            super().check(*args, **kwargs)

    def handle(self, *args: Any, **options: Any) -> None:
        configure_logging(options["log_format"], options["verbosity"])
        backend = backend_option(options["backend"])
        worker_options = self._worker_options(backend, options)
        code = Supervisor(worker_options, backend).run()
        if code:
            raise CommandError(f"threadmill_worker exited with code {code}.", returncode=code)

    def _queues(self, backend: ThreadmillTaskBackend, asked: list[str] | None) -> tuple[str, ...]:
        queues = asked or sorted(backend.queues) or ["default"]
        for queue in queues:
            try:
                check_queue_name(queue)
            except ImproperlyConfiguredThreadmill as exc:
                raise CommandError(str(exc)) from exc
            if backend.queues and queue not in backend.queues:
                raise CommandError(
                    f"Queue {queue!r} is not in TASKS[{backend.alias!r}]['QUEUES'] "
                    f"({', '.join(sorted(backend.queues))}). Add it there or pick one of those."
                )
        return tuple(dict.fromkeys(queues))

    def _worker_options(
        self, backend: ThreadmillTaskBackend, options: dict[str, Any]
    ) -> WorkerOptions:
        threads = options["threads"]
        prefetch = options["prefetch"] if options["prefetch"] is not None else 4 * threads
        _positive("--processes", options["processes"])
        _positive("--threads", threads)
        _positive("--prefetch", prefetch)
        _positive("--max-tasks", options["max_tasks"], allow_none=True)
        if prefetch > MAX_PREFETCH:
            raise CommandError(
                f"--prefetch {prefetch} is above the ceiling of {MAX_PREFETCH}: a crashed process "
                "would hold that many tasks until their leases lapse. Use more processes instead."
            )
        if options["max_tasks_jitter"] < 0:
            raise CommandError("--max-tasks-jitter must be 0 or more.")
        if options["max_tasks_jitter"] and options["max_tasks"] is None:
            raise CommandError("--max-tasks-jitter needs --max-tasks.")
        if options["task_timeout"] is not None and options["task_timeout"] <= 0:
            raise CommandError("--task-timeout must be more than 0 seconds.")
        if options["grace_period"] < 0:
            raise CommandError("--grace-period must be 0 or more seconds.")
        reap_interval = options["reap_interval"]
        if reap_interval is None:
            reap_interval = backend.settings.lease_ttl_s
        if reap_interval < 0:
            raise CommandError("--reap-interval must be 0 (off) or more seconds.")
        return WorkerOptions(
            backend_alias=backend.alias,
            queues=self._queues(backend, options["queues"]),
            processes=options["processes"],
            threads=threads,
            prefetch=prefetch,
            max_tasks=options["max_tasks"],
            max_tasks_jitter=options["max_tasks_jitter"],
            burst=options["burst"],
            sync_ack=options["sync_ack"],
            grace_period_s=options["grace_period"],
            task_timeout_s=options["task_timeout"],
            reap_interval_s=backend.settings.lease_ttl_s
            if reap_interval is None
            else reap_interval,
        )
