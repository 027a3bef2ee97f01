"""The lines of ``--burst`` that name queues (paused ones it leaves tasks in, rate-limited ones
whose next start it waits for, ones at their concurrency limit whose slot it waits for) name at
most 20 and count the others in the same field: ``queues=q00,...,q19,+5_more``.

They named every one: a burst over thousands of paused or limited queues (a queue per tenant,
each with its limit) logged a line of tens of KB (wording.listed_values).
"""

import re
from collections.abc import Callable

import pytest

from django_threadmill.broker import Broker
from django_threadmill.wording import MAX_LISTED_IDS
from tests.conftest import serving
from tests.lifecycle.support import reserve
from tests.support import Command, run_to_completion
from tests.worker import tasks

QUEUES = [f"q{n:02}" for n in range(MAX_LISTED_IDS + 5)]  # sorted, as the worker serves them
LISTED = ",".join([*QUEUES[:MAX_LISTED_IDS], "+5_more"])
QUEUES_FIELD = re.escape(f"queues={LISTED}")  # for a log line pattern
SLOW_RATE = {"queue_limits": {queue: {"rate": "30/h"} for queue in QUEUES}}  # one per 120 s
ONE_AT_A_TIME = {"queue_limits": {queue: {"concurrency": 1} for queue in QUEUES}}


threadmill_settings = serving(QUEUES)


def enqueued(times: int) -> None:
    """Enqueue ``times`` tasks to each queue."""
    for queue in QUEUES:
        for n in range(times):
            tasks.square.using(queue_name=queue).enqueue(n)


def burst(start_worker: Callable[..., Command], options: dict[str, object]) -> Command:
    """Start a --burst worker over QUEUES, with a thread for each, so one refill asks them
    all and finds every limit at once."""
    threads = str(len(QUEUES))
    env = {"THREADMILL_QUEUES": ",".join(QUEUES)}
    return start_worker("--burst", "--threads", threads, extra_env=env, options=options)


def test_the_paused_queues_a_burst_leaves_tasks_in_are_named_twenty_and_counted(
    broker: Broker, start_worker: Callable[..., Command]
) -> None:
    enqueued(1)
    for queue in QUEUES:
        broker.pause(queue, "ada")

    log = run_to_completion(burst(start_worker, {}))

    counted = ",".join([*(f"{queue}:1" for queue in QUEUES[:MAX_LISTED_IDS]), "+5_more"])
    assert f"Burst ends with tasks left in paused queues queues={counted}: " in log, log


@pytest.mark.parametrize("tasks_options", [SLOW_RATE])
def test_the_rate_limited_queues_a_burst_waits_for_are_named_twenty_and_counted(
    broker: Broker, start_worker: Callable[..., Command]
) -> None:
    enqueued(2)
    for queue in QUEUES:  # each queue's start of this period taken: the next is 120 s off
        assert len(reserve(broker, queue)) == 1

    waiting = burst(start_worker, SLOW_RATE)

    waiting.wait_for_log(
        rf"Burst waits for the next start of a rate-limited queue {QUEUES_FIELD}\n"
    )


@pytest.mark.parametrize("tasks_options", [ONE_AT_A_TIME])
def test_the_queues_at_their_limit_a_burst_waits_for_are_named_twenty_and_counted(
    broker: Broker, start_worker: Callable[..., Command]
) -> None:
    enqueued(2)
    for queue in QUEUES:  # each queue's one slot held, as by another worker
        assert len(reserve(broker, queue)) == 1

    waiting = burst(start_worker, ONE_AT_A_TIME)

    waiting.wait_for_log(
        rf"Burst waits for a slot of a queue at its concurrency limit {QUEUES_FIELD} \("
    )
