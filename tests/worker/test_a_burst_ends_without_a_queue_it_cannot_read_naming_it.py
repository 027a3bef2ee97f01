"""A ``--burst`` worker whose queue's key holds a value of another type (docs/lifecycle.md,
Keys of another type) runs what the other queues hold, then ends naming the queue it could not
read. It never ended: the failed queue, asked again every few seconds, counted as work due
within the burst's horizon, so the burst waited, asked, failed and waited again for good."""

import textwrap

import redis

from django_threadmill.broker import Broker
from tests.support import Command, run_to_completion
from tests.worker import tasks

# The real command, with the burst's horizon one second long, not sixty, and a failed queue
# asked again every tenth of a second, not five.
SCRIPT = textwrap.dedent(
    """
    import sys

    from django.core.management import execute_from_command_line

    from django_threadmill.worker import prefetcher

    prefetcher.BURST_HORIZON_MS = 1000
    prefetcher.FAILED_QUEUE_RECHECK_S = 0.1
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[1:]])
    """
)


def test_the_burst_runs_the_other_queues_and_ends_naming_the_one_it_could_not_read(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    result = tasks.square.enqueue(3)
    redis_client.set(broker.queue_keys("emails").ready, "another program's value")

    burst = Command(
        redis_url,
        key_prefix,
        "--burst",
        "--processes",
        "1",
        "--queue",
        "default",
        "--queue",
        "emails",
        code=SCRIPT,
    )
    log = run_to_completion(burst, timeout_s=60)

    result.refresh()
    assert result.return_value == 9
    assert (
        "Burst ends without the queues it could not read queues=emails: their calls failed "
        "for 1 s (the error is logged above, when each began to fail)"
    ) in log, log
