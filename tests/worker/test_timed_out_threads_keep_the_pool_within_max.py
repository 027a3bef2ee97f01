"""A thread the watchdog abandons is replaced in the same step as the pool's looks count it, so
timeouts never take the elastic pool past --max-threads."""

import textwrap
import threading
from pathlib import Path

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task
from django_threadmill.worker.pool import PoolSizing
from tests.support import Command, run_to_completion, wait_until
from tests.worker import tasks


@task
def live_threads() -> int:
    """Return how many worker threads the pool of this process counts as live, this one's
    included: a thread can run a task before the pool has listed it as started."""
    [sizing] = [thread for thread in threading.enumerate() if isinstance(thread, PoolSizing)]
    wait_until(lambda: threading.current_thread() in sizing.pool.threads, "the thread listed")
    return sizing.pool.live_count()


# A worker in this process (--processes 0) whose watchdog, once it abandoned a thread, waits in
# the timed-out task's task_finished receiver until the pool's sizing has looked twice more.
LOOKED_AT_AFTER_EACH_TIMEOUT = textwrap.dedent(
    """
    import sys
    import threading
    import time

    import django
    from django.core.management import execute_from_command_line

    django.setup()
    from django_threadmill.compat import task_finished
    from django_threadmill.worker.pool import PoolSizing

    def after_two_looks(sender, task_result, **kwargs):
        if threading.current_thread().name != "threadmill-watchdog":
            return
        [sizing] = [t for t in threading.enumerate() if isinstance(t, PoolSizing)]
        seen, since, deadline = [], time.monotonic(), time.monotonic() + 10
        while len(seen) < 2 and time.monotonic() < deadline:
            look = sizing.sizer._previous
            if look is not None and look.at > since and look not in seen:
                seen.append(look)
            threading.Event().wait(0.005)
        if len(seen) < 2:  # the race was not held open: the test would prove nothing
            print("POOL LOOKS NOT SEEN", file=sys.stderr, flush=True)

    task_finished.connect(after_two_looks, weak=False)
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_timed_out_threads_never_take_the_pool_past_max_threads(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    """The watchdog took an abandoned thread out of the live count, then wrote its timeout,
    then started its replacement: a look of the pool's in between saw every thread busy with
    tasks waiting and one thread to spare below the ceiling, and grew into it. The replacement
    then made it three threads under --max-threads 2, and it stayed so."""
    gate = tmp_path / "gate"
    stuck = [tasks.wait_for_file.enqueue(str(gate)) for _ in range(4)]
    last = live_threads.enqueue()
    command = Command(
        redis_url,
        key_prefix,
        *("--processes", "0", "--burst", "--threads", "1", "--max-threads", "2"),
        *("--target-wait", "0.01", "--task-timeout", "1.5"),
        code=LOOKED_AT_AFTER_EACH_TIMEOUT,
    )
    try:
        log = run_to_completion(command)
    finally:
        gate.touch()  # the abandoned threads' tasks end
    assert "POOL LOOKS NOT SEEN" not in log, log
    assert [backend.get_result(r.id).status for r in stuck] == [TaskResultStatus.FAILED] * 4, log
    result = backend.get_result(last.id)
    assert result.status == TaskResultStatus.SUCCESSFUL, log
    assert result.return_value == 2, log
