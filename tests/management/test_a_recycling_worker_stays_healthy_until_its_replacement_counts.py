"""threadmill_health counts a recycling worker process until its replacement has renewed.

A process that recycles (--max-tasks, --max-memory) signs off as it exits, and its replacement
counts from its first renewal. The two were not ordered: the recycled process signed off as
soon as its last task was written, and the replacement renewed only once it had started, so
the host read live=0 in between and a probe exited 1 for a worker that was only recycling.
Measured with --processes 1 --max-tasks 1 on echo tasks: 37% of reads found no live process,
gaps of 10 ms at the median and 185 ms at the worst. A recycled process now signs off once the
supervisor says its replacement counts (for at most a few seconds), renewing meanwhile.

Here the replacement is held before it starts, as a slow start (a big process's fork, a loaded
host) holds it, until the test has probed the host.
"""

import subprocess
import textwrap
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.management.health import HealthCode
from tests.management.test_health import HOST, probe_at
from tests.management.test_health_stops_counting_a_killed_process_at_once import sighted_pids
from tests.support import Command, wait_until
from tests.worker import tasks

LEASE_TTL_S = 60.0  # a sighting counts for the whole test unless it is signed off

# threadmill_worker with argv[3:], whose worker processes after the first (replacements) wait
# for the file argv[2] before they start; the first says so in the file argv[1].
HELD_REPLACEMENTS = textwrap.dedent(
    """
    import os
    import sys
    import time

    import django

    django.setup()

    from django.core.management import execute_from_command_line

    from django_threadmill.worker import shutdown, slots

    # The recycled process waits for its replacement this long at most (the grace period bounds
    # it too): the default 5 s passed before the test's probe, a subprocess, had answered on a
    # loaded machine, and the host then read live=0 as it does once that wait is over.
    shutdown.REPLACEMENT_WAIT_S = 600.0
    first_started, release = sys.argv[1], sys.argv[2]
    run_worker_process = slots.run_worker_process

    def replacements_held(*args, **kwargs):
        if os.path.exists(first_started):
            while not os.path.exists(release):
                time.sleep(0.01)  # the forked child's own wait: the test makes the file
        else:
            open(first_started, "w").close()
        run_worker_process(*args, **kwargs)

    slots.run_worker_process = replacements_held
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[3:]])
    """
)


def test_the_host_stays_healthy_while_a_process_recycles(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    def probe() -> subprocess.CompletedProcess[str]:
        return probe_at(redis_url, key_prefix, "--queue", "default", lease_ttl_s=LEASE_TTL_S)

    release = tmp_path / "release"
    runs = tmp_path / "runs"
    result = tasks.count_run.enqueue(str(runs), 1)
    worker = Command(
        redis_url,
        key_prefix,
        str(tmp_path / "first started"),
        str(release),
        "--skip-checks",
        "--processes", "1",
        "--queue", "default",
        "--max-tasks", "1",
        lease_ttl_s=LEASE_TTL_S,
        code=HELD_REPLACEMENTS,
    )  # fmt: skip
    try:
        first = int(worker.wait_for_log(r"Worker process spawned slot=0 pid=(\d+)")[1])
        worker.wait_for_log(rf"Worker process recycling slot=0 pid={first}")
        # The recycled process is done with its task: it has signed off (before), or it waits
        # for its replacement to renew before it does.
        worker.wait_for_log(
            rf"Worker process stopped worker_id=[^ ]*:{first}:"
            rf"|Recycled, signing off once the replacement renews worker_id=[^ ]*:{first}:"
        )
        while_recycling = probe()
        release.touch()
        spawned = worker.wait_for_log(rf"Worker process spawned slot=0 pid=(?!{first}\b)(\d+)")
        replacement = int(spawned[1])
        worker.wait_for_log(rf"Worker process recycled slot=0 pid={first}")
        workers_key = backend.broker.queue_keys("default").workers
        wait_until(
            lambda: sighted_pids(redis_client, workers_key) == {replacement},
            "the replacement counted, the recycled process signed off",
        )
        once_replaced = probe()
        worker.signal()
        assert worker.wait() == 0, worker.log
    finally:
        release.touch()
        worker.close()

    assert while_recycling.returncode == HealthCode.HEALTHY, while_recycling.stderr
    assert f"Healthy host={HOST} live=1 min_processes=1 queues=default" in while_recycling.stdout
    assert once_replaced.returncode == HealthCode.HEALTHY, once_replaced.stderr
    assert f"Healthy host={HOST} live=1 " in once_replaced.stdout
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert runs.read_text() == "1\n"  # run once, across the recycle
