"""The line of a supervisor's reap pass that a stop ended between two rounds names at most 20
of the queues with expired leases left, and counts the others in the same field:
``queues=q00,...,q19,+5_more``.

It named every one: a stop during a pass over the backlog of thousands of queues (every worker
of a busy deploy killed at once) logged them all in one line (wording.listed_values).
"""

import redis

from django_threadmill.broker import Broker
from django_threadmill.wording import MAX_LISTED_IDS
from tests.lifecycle.support import expired_ghost_leases
from tests.support import run_to_completion

from .test_supervisor_chores_at_a_stop import ROUND, worker

QUEUES = [f"q{n:02}" for n in range(MAX_LISTED_IDS + 5)]  # registered in Redis, sorted
# Expired leases per queue: three rounds, the stop comes during the second. Their records are
# gone (ghosts, which a round counts and drops as it does any lease).
EXPIRED = 2 * ROUND + 1
LEFT = "Reap pass ended between two rounds on a stop signal, expired leases left queues="


def test_a_stop_during_a_pass_over_twenty_five_queues_names_twenty_and_counts_the_others(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    expired_ghost_leases(broker, redis_client, QUEUES, EXPIRED)
    log = run_to_completion(worker(redis_url, key_prefix, "reap_each"))

    listed = ",".join([*QUEUES[:MAX_LISTED_IDS], "+5_more"])
    assert f"{LEFT}{listed} (the next pass settles them)" in log, log
