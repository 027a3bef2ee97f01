"""manage.py threadmill_queue forget-damaged with ids: an id not in the list is named, and an id
listed escaped (a byte that is not UTF-8 shown as \\xff) is forgotten as listed.

Before, a mistyped id answered "Forgot 0 damaged record(s)" with exit 0, and an id that is not
UTF-8 could only be dropped with --all, which drops every other entry too.
"""

import pytest
import redis
from django.core.management import CommandError

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from tests.support import output_of


def test_an_id_not_in_the_list_is_named_and_the_others_are_forgotten(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    key = broker.queue_keys("default").damaged
    redis_client.hset(key, mapping={"known": "1700000000000 acquire: why", "other": "1 reap: x"})

    with pytest.raises(CommandError) as refused:
        output_of("threadmill_queue", "forget-damaged", "default", "known", "typo")

    assert str(refused.value) == (
        "Forgot 1 damaged record(s) of queue default; not in its damaged list: typo. Give each "
        "id as 'manage.py threadmill_queue damaged default' lists it."
    )
    assert redis_client.hkeys(key) == ["other"]


def test_an_id_that_is_not_utf8_is_forgotten_as_the_listing_shows_it(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    key = broker.queue_keys("default").damaged
    redis_client.hset(key, mapping={b"bad\xff\xfeid": "1700000000000 acquire: id not UTF-8"})
    redis_client.hset(key, mapping={"kept": "1700000000000 acquire: why"})
    [listed] = [
        line
        for line in output_of("threadmill_queue", "damaged", "default").splitlines()
        if "bad" in line
    ]
    shown = listed.split()[1].removeprefix("id=")
    assert shown == "bad\\xff\\xfeid"

    assert output_of("threadmill_queue", "forget-damaged", "default", shown) == (
        "Forgot 1 damaged record(s) of queue default.\n"
    )
    assert redis_client.hkeys(key) == ["kept"]
