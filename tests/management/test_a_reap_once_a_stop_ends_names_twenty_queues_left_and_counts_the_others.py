"""``threadmill_reap --once`` ended between two rounds by a stop names at most 20 of the queues
that still hold expired leases and counts the others: "queue q00, ..., q19 and 5 more still
holds expired leases".

It named every one: a Ctrl-C during a pass over the backlog of thousands of queues (every
worker of a busy deploy killed at once) printed them all in one error (wording.listed_names).
The supervisor's own pass says the same in its log line: tests/worker.
"""

import redis

from django_threadmill.broker import Broker
from django_threadmill.wording import MAX_LISTED_IDS
from tests.lifecycle.support import expired_ghost_leases
from tests.support import Command, run_to_completion

from .test_operator_commands_on_a_big_backlog import STOPPED_AFTER_TWO_ROUNDS

QUEUES = [f"q{n:02}" for n in range(MAX_LISTED_IDS + 5)]  # registered in Redis, sorted
# Expired leases per queue, at a batch of one: three rounds, the stop comes after the second.
# Their records are gone (ghosts, which a round counts and drops as it does any lease).
EXPIRED = 3


def test_a_stop_during_a_once_pass_over_twenty_five_queues_names_twenty_and_counts_the_others(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    expired_ghost_leases(broker, redis_client, QUEUES, EXPIRED)
    reap = Command(
        redis_url,
        key_prefix,
        "--once",
        "--skip-checks",
        "--batch-size",
        "1",
        code=STOPPED_AFTER_TWO_ROUNDS,
    )
    log = run_to_completion(reap, code=1)

    named = f"{', '.join(QUEUES[:MAX_LISTED_IDS])} and 5 more"
    assert (
        "Reap pass stopped part-way by a stop signal: the counts above are what it settled, and "
        f"queue {named} still holds expired leases (nothing is half done)."
    ) in log, log
