"""``threadmill_queue forget-damaged`` names an id of 10,000 characters it did not find short,
in its error and in its audit line.

"not in its damaged list: <the whole id>" echoed it whole (a message of 10,159 characters),
and the audit line logged it whole too. Every entry a damaged list holds (a task id, or a
guard key of at most 70 characters) is named whole, as the entries dropped beside it are.
"""

import logging

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker

LONG = "x" * 10_000 + "@default"
SHOWN = f"{'x' * 100!r}... (10,008 characters)"
ENTRY = "1700000000000 acquire: its key holds no hash"


@pytest.mark.usefixtures("backend")
def test_an_id_of_ten_thousand_characters_not_found_is_named_by_its_start_and_length(
    broker: Broker, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    [part] = broker.every_part("default")
    redis_client.hset(broker.queue_keys(part).damaged, "u:found", ENTRY)

    with (
        caplog.at_level(logging.INFO, logger="django_threadmill"),
        pytest.raises(CommandError) as refused,
    ):
        call_command("threadmill_queue", "forget-damaged", "default", "u:found", LONG, "typo")

    assert str(refused.value) == (
        f"Forgot 1 damaged record(s) of queue default; not in its damaged list: {SHOWN} and typo. "
        "Give each id as 'manage.py threadmill_queue damaged default' lists it."
    )
    [line] = [record.getMessage() for record in caplog.records]
    assert line.startswith(
        "Damaged records forgotten backend=default queue=default "
        f"ids=u:found,{SHOWN},typo forgot=1 by="
    )
