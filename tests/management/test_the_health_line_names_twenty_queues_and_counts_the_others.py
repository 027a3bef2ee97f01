"""threadmill_health names at most 20 of the queues it read, and of the keys it left out, and
counts the others in the same field: ``queues=a,b,...,t,+1983_more``.

Its one line named every queue it read: without --queue a probe reads every queue in QUEUES
and every queue Redis knows, and with 2,000 queues its line was 12 KB (140 KB for 10,000 queues
of 13 characters), which an orchestrator cuts short or stores with every probe. The queues it
could not read on a Redis Cluster node that does not answer are named as the admin names ids:
the first 20, then how many more.
"""

from io import StringIO

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker
from django_threadmill.broker.layouts import QueueNames
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.management.commands.threadmill_health import _queues_unread
from django_threadmill.management.health import HealthCode
from django_threadmill.wording import MAX_LISTED_IDS

QUEUES = [f"q{n:04}" for n in range(2_000)]  # registered in Redis, as enqueue registers them
READ = sorted(["default", "emails", "reports", *QUEUES])  # QUEUES and those, as a probe reads
LONGEST_LINE = 2_000  # characters: 20 names, the count and the rest of the line


@pytest.fixture
def many_queues(broker: Broker) -> None:
    broker.register_queues(QUEUES)


def unhealthy(*args: str) -> CommandError:
    """Run the probe in this process; return the CommandError it ended with."""
    with pytest.raises(CommandError) as ended:
        call_command("threadmill_health", *args, stdout=StringIO(), stderr=StringIO())
    return ended.value


def field(line: str, name: str) -> list[str]:
    """Return the items of the ``name=a,b,c`` field of ``line``."""
    [value] = [word for word in line.split() if word.startswith(f"{name}=")]
    return value.removeprefix(f"{name}=").split(",")


@pytest.mark.usefixtures("many_queues")
def test_a_probe_of_two_thousand_queues_names_twenty_and_counts_the_others() -> None:
    too_few = unhealthy()

    line = str(too_few)
    assert too_few.returncode == HealthCode.TOO_FEW
    assert field(line, "queues") == [*READ[:MAX_LISTED_IDS], f"+{len(READ) - MAX_LISTED_IDS}_more"]
    assert " lease_ttl_s=60 last_seen=never live_elsewhere=0: fewer worker processes" in line
    assert len(line) < LONGEST_LINE, len(line)


@pytest.mark.usefixtures("many_queues")
def test_twenty_keys_left_out_are_each_named_and_more_are_counted(
    broker: Broker, redis_client: redis.Redis
) -> None:
    junk = [broker.queue_keys(queue).workers for queue in QUEUES[: MAX_LISTED_IDS + 10]]
    for key in junk[:MAX_LISTED_IDS]:
        redis_client.set(key, "junk")
    twenty = field(str(unhealthy()), "left_out")
    for key in junk[MAX_LISTED_IDS:]:
        redis_client.set(key, "junk")
    thirty = unhealthy()

    assert sorted(twenty) == sorted(junk[:MAX_LISTED_IDS])
    assert thirty.returncode == HealthCode.UNREACHABLE
    *named, more = field(str(thirty), "left_out")
    assert (len(set(named) & set(junk)), more) == (MAX_LISTED_IDS, "+10_more")
    assert len(str(thirty)) < LONGEST_LINE, len(str(thirty))


def test_the_queues_on_a_node_that_does_not_answer_are_named_twenty_and_counted() -> None:
    down = BrokerUnavailable("Redis at redis://node-3:6379 did not answer")
    names = QueueNames(queues=READ, unreached=dict.fromkeys(QUEUES, down))

    said = _queues_unread(names, 2.0)

    named = ", ".join(QUEUES[:MAX_LISTED_IDS])
    assert said == (
        f"heartbeats not read in {named} and 1,980 more, on a Redis Cluster node that does not "
        "answer: Redis at redis://node-3:6379 did not answer"
    )
