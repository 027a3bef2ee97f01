"""manage.py threadmill_queue damaged with more entries than one listing reads: it says how many
it left out.

The listing reads at most DamagedRecords.MAX_LISTED entries per queue part; before, it printed
those and nothing else, so 3,000 damaged records read as 1,000.
"""

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from tests.support import output_of


def listing_of(broker: Broker, redis_client: redis.Redis, entries: int) -> list[str]:
    """Set ``entries`` records aside in the default queue; return the lines ``damaged`` prints."""
    key = broker.queue_keys("default").damaged
    redis_client.hset(
        key, mapping={f"id-{n}": "1700000000000 acquire: why" for n in range(entries)}
    )
    return output_of("threadmill_queue", "damaged", "default").splitlines()


def test_a_listing_that_leaves_entries_out_says_how_many(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    *listed, last = listing_of(broker, redis_client, 3000)

    assert all(line.startswith("queue=default id=id-") for line in listed)
    assert last == (
        f"queue=default: {3000 - len(listed):,} more damaged record(s) not listed (at most "
        f"1,000 are read per queue or shard); forget the ones listed once fixed, then list again."
    )


def test_a_listing_that_shows_every_entry_adds_nothing(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    assert len(listing_of(broker, redis_client, 5)) == 5
