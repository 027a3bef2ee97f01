"""A stop that comes while the supervisor reaps a backlog or fires many schedules.

A backlog of expired leases (every worker of a busy queue killed at once: 100,000 reservations
are 200 rounds of 500) makes the supervisor's reap pass long while Redis answers every call.
Before, a SIGTERM left that pass behind at once: the process exited in the middle of it, and the
pass's counts, its last round's log lines, ``task_finished`` signals and done-index entries could
be lost. The pass now ends between two rounds, after the stop was relayed to the processes, and
logs what it settled; the schedules likewise end between two (docs/worker.md, Shutdown).
"""

import textwrap

import redis

from django_threadmill.broker import Broker
from testproject.example.tasks import echo
from tests.support import Command, run_python

ROUND = 500  # the supervisor's reap batch (reaper.DEFAULT_BATCH_SIZE): a round per 500 leases
TASKS = 3 * ROUND  # three rounds; the stop comes during the second

# threadmill_worker with argv[1:], in which a SIGTERM arrives while the given Broker method's
# second call is under way: the call answers once the supervisor has relayed the stop to its
# processes, as a long call of a busy Redis would, and any third call takes for ever (the rest
# of a long pass, which outlasts the second a stop gives it). A reap call that finds nothing is
# no round of the backlog, and is not counted.
STOPPED_DURING_THE_SECOND_CALL = textwrap.dedent(
    """
    import os
    import signal
    import sys
    import threading

    import django

    django.setup()

    from django.core.management import execute_from_command_line

    from django_threadmill.broker import Broker
    from django_threadmill.worker.supervisor import Supervisor

    method, *argv = sys.argv[1:]
    relayed, calls = threading.Event(), []
    original, relay = getattr(Broker, method), Supervisor._relay

    def relay_heard(self):
        relay(self)
        relayed.set()

    def answered_once_relayed(self, *args, **kwargs):
        if len(calls) >= 2:
            threading.Event().wait()
        reply = original(self, *args, **kwargs)
        if method == "reap_each" and not any(getattr(r, "looked_at", 0) for r in reply):
            return reply
        calls.append(args)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)
            assert relayed.wait(30)
        return reply

    Supervisor._relay = relay_heard
    setattr(Broker, method, answered_once_relayed)
    execute_from_command_line(["manage.py", "threadmill_worker", *argv])
    """
)


def expire(redis_client: redis.Redis, leases: str) -> None:
    """Make every lease in ``leases`` lapse: as if their workers were killed long ago."""
    redis_client.zadd(leases, {member: 0 for member in redis_client.zrange(leases, 0, -1)}, xx=True)


def reserved(broker: Broker) -> str:
    """Reserve TASKS tasks of the default queue; return its leases key."""
    for n in range(TASKS):
        echo.enqueue(n)
    assert len(broker.acquire("default", TASKS).reservations) == TASKS
    return broker.queue_keys("default").leases


def worker(
    redis_url: str,
    key_prefix: str,
    method: str,
    *args: str,
    options: dict[str, object] | None = None,
) -> Command:
    """Start ``threadmill_worker`` with one process, stopped during ``method``'s second call
    (above)."""
    return Command(
        redis_url,
        key_prefix,
        method,
        "--skip-checks",
        "--processes",
        "1",
        *args,
        options=options,
        code=STOPPED_DURING_THE_SECOND_CALL,
    )


def assert_ended_between_rounds(log: str) -> None:
    """The pass settled two rounds, said so, and was not left behind."""
    assert f"Reap pass dry_run=False released={2 * ROUND} failed=0 retried=0 " in log, log
    assert (
        "Reap pass ended between two rounds on a stop signal, expired leases left "
        "queues=default (the next pass settles them)" in log
    ), log
    assert "Stopping without waiting for Redis" not in log, log


def test_a_stop_during_the_first_reap_pass_ends_it_between_rounds(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    # A supervisor restarted after its workers were killed: its first pass finds the backlog.
    leases = reserved(broker)
    ready = broker.queue_keys("default").ready
    expire(redis_client, leases)
    supervisor = worker(redis_url, key_prefix, "reap_each")
    try:
        assert supervisor.wait() == 0, supervisor.log
        log = supervisor.log
    finally:
        supervisor.close()

    assert_ended_between_rounds(log)
    assert "Start-up interrupted pid=" in log
    assert (redis_client.zcard(leases), redis_client.zcard(ready)) == (ROUND, 2 * ROUND)

    rerun = run_python(
        "manage.py", "threadmill_reap", "--once", redis_url=redis_url, key_prefix=key_prefix
    )
    assert rerun.returncode == 0, rerun.stderr
    assert f"Settled queue=default released={ROUND} failed=0 " in rerun.stdout
    assert (redis_client.zcard(leases), redis_client.zcard(ready)) == (0, TASKS)


def test_a_stop_during_a_later_reap_pass_reaches_the_processes_first(
    broker: Broker, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    # The process serves another queue: the reservations released stay READY to be counted.
    leases = reserved(broker)
    ready = broker.queue_keys("default").ready
    supervisor = worker(
        redis_url, key_prefix, "reap_each", "--queue", "emails", "--reap-interval", "0.05"
    )
    try:
        supervisor.wait_for_log(r"Worker process started")
        expire(redis_client, leases)
        assert supervisor.wait() == 0, supervisor.log
        log = supervisor.log
    finally:
        supervisor.close()

    assert_ended_between_rounds(log)
    assert log.index("Stopping worker processes count=1") < log.index("Reap pass dry_run=False")
    assert "Worker process stopped worker_id=" in log
    assert (redis_client.zcard(leases), redis_client.zcard(ready)) == (ROUND, 2 * ROUND)


def test_a_stop_while_schedules_fire_ends_them_between_two(
    redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    # Three schedules due at the supervisor's first look: the stop comes as the second fires.
    every = {"task": "testproject.example.tasks.echo", "every": 3600}
    schedules = {name: every for name in ("a", "b", "c")}
    supervisor = worker(redis_url, key_prefix, "enqueue", options={"schedules": schedules})
    try:
        assert supervisor.wait() == 0, supervisor.log
        log = supervisor.log
    finally:
        supervisor.close()

    # New schedules: each first slot is recorded as handled, not fired (docs/schedules.md).
    fired = {key.rsplit(":", 1)[1] for key in redis_client.scan_iter(f"{key_prefix}*:fired:*")}
    assert fired == {"a", "b"}, log
    assert "Stopping without waiting for Redis" not in log, log
    assert "Start-up interrupted pid=" in log
