"""threadmill_schedules beside a schedule marker of another type, written by hand
(docs/lifecycle.md, Keys of another type). The enqueue script reads such a marker as none, sets
it aside and replaces it at the schedule's next slot; the listing failed on it instead ("Cannot
read the schedules' slots from Redis: … delete that key", naming no key), exit code 1, every
other schedule unlisted."""

import redis

from django_threadmill.broker import Broker
from tests.support import run_python

SCHEDULES = {
    "damaged": {"task": "tests.schedules.tasks.report", "every": 60},
    "tick": {"task": "tests.schedules.tasks.report", "every": 60, "queue_name": "emails"},
}


def test_a_marker_of_another_type_is_listed_as_never_fired_and_the_others_are_listed(
    redis_url: str, key_prefix: str, broker: Broker, redis_client: redis.Redis
) -> None:
    redis_client.hset(broker.queue_keys("default").fired("damaged"), "written", "by hand")
    redis_client.set(broker.queue_keys("emails").fired("tick"), "1700000040000")

    listing = run_python(
        "manage.py",
        "threadmill_schedules",
        redis_url=redis_url,
        key_prefix=key_prefix,
        options={"schedules": SCHEDULES},
    )

    assert (listing.returncode, listing.stderr) == (0, "")
    damaged, tick = listing.stdout.splitlines()
    assert damaged.startswith("damaged  every 0:01:00 (UTC)")
    assert damaged.endswith("last=never")
    assert tick.endswith("last=2023-11-14T22:14:00+00:00")
