"""manage.py threadmill_queue damaged with more entries than one listing reads: it says how many
it left out.

The listing reads at most DamagedRecords.MAX_LISTED entries per queue part; before, it printed
those and nothing else, so 3,000 damaged records read as 1,000.
"""

from io import StringIO

import redis
from django.core.management import call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker


def test_a_listing_that_leaves_entries_out_says_how_many(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    key = broker.queue_keys("default").damaged
    redis_client.hset(key, mapping={f"id-{n}": "1700000000000 acquire: why" for n in range(3000)})
    out = StringIO()

    call_command("threadmill_queue", "damaged", "default", stdout=out)

    *listed, last = out.getvalue().splitlines()
    assert all(line.startswith("queue=default id=id-") for line in listed)
    assert last == (
        f"queue=default: {3000 - len(listed):,} more damaged record(s) not listed (at most "
        f"1,000 are read per queue or shard); forget the ones listed once fixed, then list again."
    )


def test_a_listing_that_shows_every_entry_adds_nothing(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    key = broker.queue_keys("default").damaged
    redis_client.hset(key, mapping={f"id-{n}": "1700000000000 acquire: why" for n in range(5)})
    out = StringIO()

    call_command("threadmill_queue", "damaged", "default", stdout=out)

    assert len(out.getvalue().splitlines()) == 5
