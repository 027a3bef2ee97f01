"""A task that ends its process as it starts (a segfault in a C extension, an instant OOM
kill, ``os._exit``), before its held start notice goes out, is settled by the reaper as an
attempt once it has been put back once: FAILED ``LeaseExpired`` (or retried by its policy).

The reaper took each such run for a reservation never started and put the task back to READY,
so it ran again in the next process, which it ended too: READY for good with no attempt
counted, every process of the worker dying in turn until the supervisor gave up (exit 2) and
a service manager started it again (docs/worker.md, Leases)."""

import re
from collections.abc import Callable

from django_threadmill.compat import TaskResultStatus
from tests.support import Command, wait_until
from tests.worker import tasks


def test_the_task_is_failed_after_one_put_back_and_the_worker_runs_on(
    start_worker: Callable[..., Command],
) -> None:
    ending = tasks.end_process.enqueue()
    after = tasks.square.enqueue(4)
    worker = start_worker("--threads", "1", "--reap-interval", "0.2", lease_ttl_s=1.0)

    wait_until(lambda: ending.refresh() or ending.is_finished, "the task settled", timeout_s=60)

    assert ending.status == TaskResultStatus.FAILED, worker.log
    [error] = ending.errors
    assert error.exception_class_path == "django_threadmill.exceptions.LeaseExpired"
    wait_until(lambda: after.refresh() or after.is_finished, "the next task", timeout_s=60)
    assert after.return_value == 16
    # Once as a reservation the reaper put back, once as the attempt it settled.
    assert len(re.findall(r"Worker process died slot=0", worker.log)) == 2, worker.log
    assert worker.process.poll() is None, worker.log  # the supervisor did not give up
