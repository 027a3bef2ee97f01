"""What a reap pass that failed on many queues says names at most 20 of them and counts the
others: ``Reap of queue q00, q01, ... q19 and 5 more failed, the other queues were reaped``.

It named every one, in ``threadmill_reap --once``'s error and in the supervisor's WARNING each
``--reap-interval``: a key of another type in each of thousands of queues (an ACL rule, a
restore gone wrong), or the queues of a Redis Cluster node that stopped answering, made a line
of tens of KB (wording.listed_names).
"""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_threadmill.broker import Broker
from django_threadmill.wording import MAX_LISTED_IDS
from tests.conftest import serving

pytestmark = pytest.mark.usefixtures("logging_put_back")

BROKEN = [f"q{n:02}" for n in range(MAX_LISTED_IDS + 5)]  # sorted, as a pass reaps them
QUEUES = ["default", *BROKEN]
NAMED = f"{', '.join(BROKEN[:MAX_LISTED_IDS])} and 5 more"
TWO_SHARDS = {"queue_shards": dict.fromkeys(BROKEN, 2)}


threadmill_settings = serving(QUEUES)


def broken(broker: Broker, parts: list[str]) -> None:
    """Make the ``leases`` key of each of ``parts`` a string: its reap call fails."""
    for part in parts:
        broker.client.set(broker.queue_keys(part).leases, "not a zset")


def reap_failed() -> str:
    """Run ``threadmill_reap --once``; return what its error says before Redis's words."""
    with pytest.raises(CommandError) as failed:
        call_command("threadmill_reap", "--once", stdout=StringIO())
    said, _, _ = str(failed.value).partition(": Redis at ")
    return said


def test_twenty_five_queues_failing_beside_one_reaped_are_named_twenty_and_counted(
    broker: Broker,
) -> None:
    broken(broker, BROKEN)

    assert reap_failed() == f"Reap of queue {NAMED} failed, the other queues were reaped"


def test_every_queue_failing_is_named_twenty_and_counted(broker: Broker) -> None:
    broken(broker, QUEUES)

    named = f"default, {', '.join(BROKEN[: MAX_LISTED_IDS - 1])} and 6 more"
    assert reap_failed() == f"Reap of every queue failed ({named}), none was reaped"


@pytest.mark.parametrize("tasks_options", [TWO_SHARDS])
def test_twenty_five_queues_failing_in_one_shard_are_named_twenty_and_counted(
    broker: Broker,
) -> None:
    broken(broker, [broker.parts(queue)[0] for queue in BROKEN])

    assert reap_failed() == f"Reap of part of queue {NAMED} failed, the rest was reaped"
