"""``threadmill_queue forget-damaged`` names at most 20 of the ids it did not find, and counts
the others, as the admin's messages list ids.

"not in its damaged list: …" named every id not found: thousands given (a list pasted from a
file, the damaged listing of another queue) made a message of as many ids. It now names the
first 20 and says how many more, as the admin does after an action that left tasks alone.
"""

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker
from django_threadmill.wording import MAX_LISTED_IDS

ENTRY = "1700000000000 acquire: its key holds no hash"
LISTING = "Give each id as 'manage.py threadmill_queue damaged default' lists it."


@pytest.mark.usefixtures("backend", "logging_put_back")
def test_a_thousand_ids_not_found_are_named_twenty_and_counted(
    broker: Broker, redis_client: redis.Redis
) -> None:
    [part] = broker.every_part("default")
    redis_client.hset(broker.queue_keys(part).damaged, "u:found", ENTRY)
    missing = [f"typo-{n}" for n in range(1_000)]

    with pytest.raises(CommandError) as refused:
        call_command("threadmill_queue", "forget-damaged", "default", "u:found", *missing)

    named = ", ".join(missing[:MAX_LISTED_IDS])
    assert str(refused.value) == (
        f"Forgot 1 damaged record(s) of queue default; not in its damaged list: {named} and "
        f"980 more. {LISTING}"
    )


@pytest.mark.usefixtures("backend", "logging_put_back")
def test_twenty_ids_not_found_are_each_named() -> None:
    missing = [f"typo-{n}" for n in range(MAX_LISTED_IDS)]

    with pytest.raises(CommandError) as refused:
        call_command("threadmill_queue", "forget-damaged", "default", *missing)

    named = f"{', '.join(missing[:-1])} and {missing[-1]}"
    assert str(refused.value) == (
        f"Forgot 0 damaged record(s) of queue default; not in its damaged list: {named}. {LISTING}"
    )
