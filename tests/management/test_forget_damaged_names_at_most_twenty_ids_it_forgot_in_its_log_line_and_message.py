"""threadmill_queue forget-damaged names at most 20 of the ids it was given in its log line, and
of those it dropped in the message of a forget a shard stopped midway, and counts the others.

The ids it did not find were cut so already (the first 20, then how many more), but its audit
line named every id given (``ids=a,b,...``) and that message every id dropped: given 10,000
task ids (a listing pasted back), one log line of 330 KB, and a message of as many.
"""

import logging
from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker
from django_threadmill.wording import MAX_LISTED_IDS

LOGGER = "django_threadmill.management.commands.threadmill_queue"
ENTRY = "1700000000000 acquire: its key holds no hash"
GIVEN = [f"{n:032x}" for n in range(10_000)]  # as many task ids, 32 hex digits each
FOUND = 30  # of those, in the damaged lists
LONGEST_LINE = 2_000  # characters: 20 ids, the count and the rest of the line (or message)


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_shards": {"default": 4}}


@pytest.fixture
def shard_sets(broker: Broker, redis_client: redis.Redis) -> list[str]:
    """Plant the first FOUND ids of GIVEN in the damaged sets of the first two shards a forget
    walks (25 in the first, 5 in the second); return every shard's set, in that order."""
    keys = [broker.queue_keys(part).damaged for part in broker.every_part("default")]
    redis_client.hset(keys[0], mapping=dict.fromkeys(GIVEN[:25], ENTRY))
    redis_client.hset(keys[1], mapping=dict.fromkeys(GIVEN[25:FOUND], ENTRY))
    return keys


def forget_given(caplog: pytest.LogCaptureFixture) -> tuple[CommandError, str]:
    """Forget every id of GIVEN; return the error it ended with and its log line."""
    with caplog.at_level(logging.INFO, logger=LOGGER), pytest.raises(CommandError) as ended:
        call_command("threadmill_queue", "forget-damaged", "default", *GIVEN, stdout=StringIO())
    [line] = [record.getMessage() for record in caplog.records if record.name == LOGGER]
    return ended.value, line


@pytest.mark.usefixtures("shard_sets", "logging_put_back")
def test_the_log_line_of_a_forget_of_ten_thousand_ids_names_twenty(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused, line = forget_given(caplog)

    assert str(refused).startswith(f"Forgot {FOUND} damaged record(s) of queue default; not in")
    more = len(GIVEN) - MAX_LISTED_IDS
    assert f" ids={','.join(GIVEN[:MAX_LISTED_IDS])},+{more}_more forgot={FOUND} by=" in line
    assert len(line) < LONGEST_LINE, len(line)


@pytest.mark.usefixtures("logging_put_back")
def test_a_forget_a_shard_stopped_names_twenty_of_the_ids_dropped_before_it(
    shard_sets: list[str], redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    redis_client.delete(shard_sets[2])
    redis_client.set(shard_sets[2], "written by another program")

    stopped, line = forget_given(caplog)

    named = ", ".join(GIVEN[:MAX_LISTED_IDS])
    assert str(stopped).startswith(
        f"Forgot {FOUND} damaged record(s) of queue default ({named} and 10 more), then "
        "stopped: the next shard failed: "
    )
    assert len(str(stopped)) < LONGEST_LINE, len(str(stopped))
    assert line.endswith(" incomplete=yes")
    assert len(line) < LONGEST_LINE, len(line)
