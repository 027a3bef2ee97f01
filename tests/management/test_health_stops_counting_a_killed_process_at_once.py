"""threadmill_health stops counting a killed worker process once its supervisor replaced it.

A process killed hard (SIGKILL, the OOM killer, a segfault in a C extension) cannot sign itself
off. Its sighting was counted live until its last renewal was lease_ttl old, so a child killed
again and again beside a healthy one added a dead id each time: the probe read live=4 with two
processes alive, and `--min-processes 4` passed. The supervisor now signs off a child it sees
die, under the worker id it picked the child's tag for.
"""

import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import cast

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.ids import worker_host_and_pid
from django_threadmill.management.health import HealthCode
from tests.management.test_health import HOST, probe_at
from tests.support import Command, running, wait_until
from tests.worker.test_recycle_replacement_and_refused_fork import recycling_with_a_long_task

LEASE_TTL_S = 60.0  # a dead sighting would count for the whole test
KILLS = 2  # fewer than the fast deaths that make the supervisor give up


def sighted_pids(redis_client: redis.Redis, workers_key: str) -> set[int]:
    """Return the pids of the worker ids sighted in a queue's workers zset."""
    ids = cast(list[str], redis_client.zrange(workers_key, 0, -1))  # decode_responses=True
    return {int(worker_host_and_pid(worker_id)[1]) for worker_id in ids}


def slot_pid(worker: Command, slot: int) -> int:
    """Return the pid of the process the supervisor last spawned in ``slot``."""
    return int(re.findall(rf"Worker process spawned slot={slot} pid=(\d+)", worker.log)[-1])


def kill_and_replace(worker: Command, sighted: Callable[[], set[int]], survivor: int) -> None:
    """SIGKILL slot 0's process once both processes renewed; wait until it was replaced."""
    doomed = slot_pid(worker, 0)
    wait_until(
        lambda: {doomed, survivor} <= sighted(), f"both processes ({doomed}, {survivor}) renewing"
    )
    os.kill(doomed, signal.SIGKILL)
    worker.wait_for_log(rf"Worker process died slot=0 pid={doomed} status=signal 9")
    wait_until(lambda: slot_pid(worker, 0) != doomed, "slot 0 restarted")


def test_a_killed_and_replaced_process_is_not_counted_live(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    start_worker: Callable[..., Command],
) -> None:
    workers_key = backend.broker.queue_keys("default").workers

    def sighted() -> set[int]:
        return sighted_pids(redis_client, workers_key)

    worker = start_worker("--processes", "2", "--queue", "default", lease_ttl_s=LEASE_TTL_S)
    with running(worker, r"(?s)Worker process started.*Worker process started"):
        survivor = slot_pid(worker, 1)
        for _ in range(KILLS):
            kill_and_replace(worker, sighted, survivor)
        alive = {slot_pid(worker, 0), survivor}
        wait_until(lambda: alive <= sighted(), f"the replacement ({slot_pid(worker, 0)}) renewing")
        probed = probe_at(
            redis_url,
            key_prefix,
            "--queue",
            "default",
            "--min-processes",
            "3",
            lease_ttl_s=LEASE_TTL_S,
        )
        left = sighted()
    assert probed.returncode == HealthCode.TOO_FEW, probed.stdout
    assert f"Unhealthy host={HOST} live=2 min_processes=3 queues=default" in probed.stderr
    assert left == alive


def test_a_recycled_process_counts_while_it_finishes_and_not_once_killed(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    start_worker: Callable[..., Command],
    tmp_path: Path,
) -> None:
    """The supervisor signs off no process still running, however slow: a recycled one
    finishing its long task beside its replacement counts until it is killed."""
    workers_key = backend.broker.queue_keys("default").workers
    worker, _, recycled = recycling_with_a_long_task(start_worker, tmp_path)
    replacement = worker.child_pids()[1]
    wait_until(
        lambda: sighted_pids(redis_client, workers_key) == {recycled, replacement},
        "the recycled process and its replacement both renewing",
    )
    os.kill(recycled, signal.SIGKILL)
    worker.wait_for_log(rf"Recycled worker process died slot=0 pid={recycled} status=signal 9")
    assert sighted_pids(redis_client, workers_key) == {replacement}
    worker.signal(signal.SIGTERM)
    assert worker.wait() == 0, worker.log
