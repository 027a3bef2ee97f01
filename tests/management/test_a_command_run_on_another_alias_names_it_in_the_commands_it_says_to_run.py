"""A command run with ``--backend bulk`` names ``--backend bulk`` in each command it says to run.

A project with two aliases, "default" and "bulk", both with a queue "default". Before,
``threadmill_queue pause default --backend bulk`` said workers take none of its tasks "until
'manage.py threadmill_queue resume default'": run as written, that resumed "default"'s queue
(which was not paused) and left "bulk"'s paused. ``forget-damaged`` pointed at the listing of
the other alias, and ``threadmill_reap --once --backend bulk`` told to run ``threadmill_reap
--once`` again, which reaps "default"'s queues. Only ``purge`` named the alias.
"""

import shlex

import pytest
import redis
from django.core.management import CommandError

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from testproject.example.tasks import echo
from tests.support import output_of

# call_command runs the reaper's logging setup in the test's own process.
pytestmark = pytest.mark.usefixtures("logging_put_back")


def said_to_run(text: str) -> list[str]:
    """Return the arguments of the first 'manage.py ...' command ``text`` quotes."""
    quoted = text.split("'manage.py ", 1)[1].split("'", 1)[0]
    return shlex.split(quoted)


def test_the_resume_a_pause_names_resumes_the_queue_it_paused(
    bulk: ThreadmillTaskBackend,
) -> None:
    paused = output_of("threadmill_queue", "pause", "default", "--backend", "bulk")

    output_of(*said_to_run(paused))

    assert Inspector(bulk.broker).paused(["default"]) == {}, paused


def test_a_forget_of_an_unknown_id_names_the_listing_of_its_own_alias(
    bulk: ThreadmillTaskBackend,
) -> None:
    with pytest.raises(CommandError) as refused:
        output_of(
            "threadmill_queue", "forget-damaged", "default", "no-such-id", "--backend", "bulk"
        )

    assert said_to_run(str(refused.value)) == [
        "threadmill_queue",
        "damaged",
        "default",
        "--backend",
        "bulk",
    ]


def test_a_held_reap_pass_names_its_alias_in_the_pass_to_run_again(
    bulk: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    echo.using(backend="bulk").enqueue(1)
    assert len(bulk.broker.acquire("default", 1).reservations) == 1
    leases = bulk.broker.queue_keys("default").leases
    redis_client.zadd(leases, dict.fromkeys(redis_client.zrange(leases, 0, -1), 0), xx=True)
    redis_client.set(bulk.broker.keyspace.server, "another-server 1")  # Redis restarted since

    said = output_of("threadmill_reap", "--once", "--skip-checks", "--backend", "bulk")

    assert "Expired leases held" in said, said
    assert said_to_run(said)[:2] == ["threadmill_reap", "--once"], said
    assert said_to_run(said)[2:] == ["--backend", "bulk"], said
