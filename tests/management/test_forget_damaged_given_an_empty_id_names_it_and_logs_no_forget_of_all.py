"""threadmill_queue forget-damaged given an empty id (``"$ID"`` with the variable unset) names
it, in its message and in its audit line.

Before, its audit line said ``ids=all`` (the words of a ``--all``, which drops every entry) for
a forget that dropped nothing, and its message named nothing: "not in its damaged list: .".
"""

import logging
from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker

LOGGER = "django_threadmill.management.commands.threadmill_queue"


@pytest.mark.usefixtures("logging_put_back")
def test_an_empty_id_not_in_the_list_is_named_and_logged_as_given(
    broker: Broker, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    key = broker.queue_keys("default").damaged
    redis_client.hset(key, "kept", "1700000000000 acquire: why")

    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(CommandError) as refused:
        call_command("threadmill_queue", "forget-damaged", "default", "", stdout=StringIO())

    assert str(refused.value) == (
        "Forgot 0 damaged record(s) of queue default; not in its damaged list: ''. Give each id "
        "as 'manage.py threadmill_queue damaged default' lists it."
    )
    [line] = [record.getMessage() for record in caplog.records if record.name == LOGGER]
    assert " ids='' forgot=0 by=" in line
    assert redis_client.hkeys(key) == ["kept"]


@pytest.mark.usefixtures("logging_put_back")
def test_an_entry_written_with_an_empty_id_is_forgotten_alone(
    broker: Broker, redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    key = broker.queue_keys("default").damaged
    redis_client.hset(key, mapping={"": "1700000000000 acquire: by hand", "kept": "1 reap: x"})
    out = StringIO()

    with caplog.at_level(logging.INFO, logger=LOGGER):
        call_command("threadmill_queue", "forget-damaged", "default", "", stdout=out)

    assert out.getvalue() == "Forgot 1 damaged record(s) of queue default.\n"
    [line] = [record.getMessage() for record in caplog.records if record.name == LOGGER]
    assert " ids='' forgot=1 by=" in line
    assert redis_client.hkeys(key) == ["kept"]
