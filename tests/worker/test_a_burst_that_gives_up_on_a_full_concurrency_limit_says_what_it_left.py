"""A ``--burst`` worker that stops waiting for a slot of a queue at its concurrency limit names
the queue and the tasks it leaves there, as it names the paused queues it leaves tasks in: it
ended saying nothing but the INFO line of its wait's start, where a killed worker's lapsed lease
held the slot (docs/schedules.md, Per-queue limits)."""

import textwrap

from django_threadmill.broker import Broker
from tests.lifecycle.support import reserve
from tests.support import Command, run_to_completion
from tests.worker import tasks

ONE_AT_A_TIME = {"queue_limits": {"default": {"concurrency": 1}}}
# The real command, with the burst's wait for a slot one second long, not sixty.
SCRIPT = textwrap.dedent(
    """
    import sys

    from django.core.management import execute_from_command_line

    from django_threadmill.worker import prefetcher

    prefetcher.BURST_HORIZON_MS = 1000
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_the_queue_and_its_tasks_are_named_as_the_burst_ends(
    broker: Broker, redis_url: str, key_prefix: str
) -> None:
    for n in range(3):
        tasks.square.enqueue(n)
    assert len(reserve(broker, "default", 1)) == 1  # its one slot held, as by another worker

    burst = Command(
        redis_url, key_prefix, "--burst", "--processes", "1", options=ONE_AT_A_TIME, code=SCRIPT
    )
    log = run_to_completion(burst)

    assert "Burst ends with tasks left in queues at their concurrency limit queues=default:2: " \
        "other tasks held every slot for 1 s, a worker's or the lease of one that died, which " \
        "holds its slot until a reaper settles it (manage.py threadmill_reap --once --backend " \
        "default)" in log, log  # fmt: skip
