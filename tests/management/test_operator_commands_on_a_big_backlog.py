"""``threadmill_reap --once`` stopped with Ctrl-C in the middle of a long pass.

A backlog of expired leases (every worker of a busy queue killed at once: 100,000 reservations
are 200 rounds of 500) makes a pass long while Redis answers every call. Before, a Ctrl-C gave
that pass a second and then left it behind: the command exited 0 with no counts, saying Redis
"has not answered", and its last round's log lines, signals and done-index entries could be
lost. The pass now ends between two rounds, prints exact counts, and a rerun settles the rest.
"""

import textwrap

import redis

from django_threadmill.broker import Broker
from testproject.example.tasks import echo
from tests.support import Command, run_python

TASKS, BATCH = 50, 10  # five rounds; the stop comes after the second

# threadmill_reap with argv[1:], in which a SIGINT arrives once the pass's second reap call
# has answered, as an operator's Ctrl-C does, and any third call takes for ever: the rest of a
# long pass, which outlasts the second a stop gives a pass.
STOPPED_AFTER_TWO_ROUNDS = textwrap.dedent(
    """
    import os
    import signal
    import sys
    import threading

    import django

    django.setup()

    from django.core.management import execute_from_command_line

    from django_threadmill.broker import Broker
    from django_threadmill.management.commands import threadmill_reap

    heard, calls = threading.Event(), []
    reap_each, stop_on_first_signal = Broker.reap_each, threadmill_reap.stop_on_first_signal

    def heard_then_stop(*args):
        stop_on_first_signal(*args)
        heard.set()

    def reap_each_then_interrupted(self, *args, **kwargs):
        calls.append(args)
        if len(calls) > 2:
            threading.Event().wait()
        reply = reap_each(self, *args, **kwargs)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGINT)
            assert heard.wait(30)
        return reply

    threadmill_reap.stop_on_first_signal = heard_then_stop
    Broker.reap_each = reap_each_then_interrupted
    execute_from_command_line(["manage.py", "threadmill_reap", *sys.argv[1:]])
    """
)


def expired_reservations(broker: Broker, redis_client: redis.Redis) -> str:
    """Reserve TASKS tasks of the default queue and expire their leases; return the leases key."""
    for n in range(TASKS):
        echo.enqueue(n)
    assert len(broker.acquire("default", TASKS).reservations) == TASKS
    leases = broker.queue_keys("default").leases
    redis_client.zadd(leases, dict.fromkeys(redis_client.zrange(leases, 0, -1), 0), xx=True)
    return leases


def test_reap_once_stopped_midway_says_what_it_settled_and_a_rerun_settles_the_rest(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    leases = expired_reservations(broker, redis_client)
    ready = broker.queue_keys("default").ready
    reap = Command(
        redis_url,
        key_prefix,
        "--once",
        "--skip-checks",
        "--batch-size",
        str(BATCH),
        code=STOPPED_AFTER_TWO_ROUNDS,
    )
    try:
        assert reap.wait() == 1, reap.log
        log = reap.log
    finally:
        reap.close()

    assert "Settled queue=default released=20 failed=0 retried=0 stale=0 set_aside=0 " in log
    assert "released=20 failed=0 retried=0 stale=0 set_aside=0 incomplete=yes" in log
    assert (
        "Reap pass stopped part-way by a stop signal: the counts above are what it settled, and "
        "queue default still holds expired leases (nothing is half done). Run 'manage.py "
        "threadmill_reap --once' again to settle them." in log
    )
    assert "has not answered" not in log
    assert (redis_client.zcard(leases), redis_client.zcard(ready)) == (TASKS - 20, 20)

    rerun = run_python(
        "manage.py",
        "threadmill_reap",
        "--once",
        "--skip-checks",
        "--batch-size",
        str(BATCH),
        redis_url=redis_url,
        key_prefix=key_prefix,
    )

    assert rerun.returncode == 0, rerun.stderr
    assert f"Settled queue=default released={TASKS - 20} failed=0 " in rerun.stdout
    assert (redis_client.zcard(leases), redis_client.zcard(ready)) == (0, TASKS)
