"""A reap pass whose advancing of workflows fails while Redis answers, every queue reaped (here
Redis loses the scripts again just after the call taking an outbox entry out loaded its own:
docs/lifecycle.md, ``manage.py threadmill_reap``), says so, and a reaping loop holds no lease
after it, unless Redis refused its writes, as it refused workers' renewals.

Before, such a pass read as Redis going away part-way: ``threadmill_reap`` exited with "Reap
pass stopped part-way, Redis stopped answering (the queues not reaped wait for the next pass)",
a worker's supervisor logged the same words; and a reaping loop held every expired lease of the
next pass as after an outage ("Redis stopped answering during the last reap pass"), of every
pass while the failure lasted.
"""

import re
import textwrap
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus, task_enqueued
from django_threadmill.worker.reap_hold import ReapHold
from django_threadmill.workflows import WorkflowResult, chain, step
from tests.backend_support import succeed
from tests.lifecycle.support import run
from tests.lifecycle.tasks import plain
from tests.servers.redis_server import RedisProcess
from tests.support import Command, HandClock, running

from .tasks import add, number

pytestmark = pytest.mark.usefixtures("logging_put_back")

FAILED = (
    "Advancing workflows failed after every queue was reaped (the outbox entries left wait for "
    "the next pass)"
)
LOST_AGAIN = "lost this backend's Lua scripts again just after they were loaded"
FORGET_ENTRY = "forget_entry.lua:"  # in the header of the script that takes an entry out

# A manage.py command, argv[1:], in which Redis forgets every script each time the client
# loads the one that takes an outbox entry out.
LOST_AS_AN_ENTRY_GOES = textwrap.dedent(
    f"""
    import sys

    import redis
    from django.core.management import execute_from_command_line

    load = redis.Redis.script_load

    def load_then_lost(self, script):
        sha = load(self, script)
        if {FORGET_ENTRY!r} in script:
            self.script_flush()
        return sha

    redis.Redis.script_load = load_then_lost
    execute_from_command_line(["manage.py", *sys.argv[1:]])
    """
)


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    """Run this module on a server of its own: its scripts are flushed."""
    return own_redis.url


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"lease_ttl": 1.0}  # the shortest lease settings take


@pytest.fixture
def entry_left(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> WorkflowResult:
    """A workflow whose first step ended, its entry in default's outbox, and no script loaded
    yet: a drain advances it, then fails to take the entry out."""
    flow = chain(step(number, 1), step(add, 1)).enqueue()
    succeed(backend, flow.steps[0].task_id, 1)
    redis_client.script_flush()
    return flow


@pytest.fixture
def lost_as_an_entry_goes(monkeypatch: pytest.MonkeyPatch) -> None:
    """In this process, LOST_AS_AN_ENTRY_GOES's Redis."""
    load = redis.Redis.script_load

    def load_then_lost(self: redis.Redis, script: Any) -> Any:
        sha = load(self, script)
        if FORGET_ENTRY in script:
            self.script_flush()
        return sha

    monkeypatch.setattr(redis.Redis, "script_load", load_then_lost)


@pytest.mark.usefixtures("entry_left", "lost_as_an_entry_goes")
def test_once_says_advancing_workflows_failed_not_that_redis_stopped_answering() -> None:
    out = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("threadmill_reap", "--once", stdout=out)

    assert str(failed.value).startswith(f"{FAILED}: Redis at ")
    assert LOST_AGAIN in str(failed.value)
    assert failed.value.returncode == 1
    assert "Settled queue=default released=0 failed=0 retried=0 stale=0 set_aside=0\n" in (
        out.getvalue()
    )


def lapsed_lease(backend: ThreadmillTaskBackend, redis_client: redis.Redis) -> str:
    """Start a task as a worker that then died would have, its lease lapsed a second ago."""
    task_id: str = plain.enqueue().id
    run(backend.broker)
    seconds, _ = redis_client.time()
    leases = backend.broker.queue_keys("default").leases
    redis_client.zadd(leases, {task_id: (int(seconds) - 1) * 1000}, xx=True)
    return task_id


def pass_at(
    hold: ReapHold, clock: HandClock[float], at: float, backend: ThreadmillTaskBackend
) -> int:
    """Run the loop to ``at``, seen running as it sleeps (no stall), then a pass there; return
    how many expired running attempts it settled."""
    while clock.now + hold.tick_s < at:
        clock.now += hold.tick_s
        hold.tick()
    clock.now = at
    return hold.run(backend).failed


@pytest.mark.usefixtures("entry_left", "lost_as_an_entry_goes")
def test_a_loop_holds_no_expired_lease_after_it(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    clock = HandClock(1000.0)
    hold = ReapHold(backend.settings.renewal_s, clock=clock)
    assert hold.run(backend).advanced == 0  # the entry failed to go
    task_id = lapsed_lease(backend, redis_client)

    assert (pass_at(hold, clock, 1000.1, backend), hold.held) == (1, "")
    assert backend.get_result(task_id).status == TaskResultStatus.FAILED


@pytest.mark.usefixtures("entry_left")
def test_a_loop_holds_expired_leases_after_it_met_writes_refused(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """Redis refusing writes refused workers' renewals too, as when a reap call meets it."""

    def refuse_writes(sender: type, **kwargs: Any) -> None:
        redis_client.config_set("min-replicas-to-write", 1)  # the entry's removal is refused

    clock = HandClock(1000.0)
    hold = ReapHold(backend.settings.renewal_s, clock=clock)
    task_enqueued.connect(refuse_writes, weak=False)
    try:
        first = hold.run(backend)
    finally:
        task_enqueued.disconnect(refuse_writes)
        redis_client.config_set("min-replicas-to-write", 0)
    lapsed_lease(backend, redis_client)

    assert pass_at(hold, clock, 1000.1, backend) == 0
    assert hold.held == "Redis refused writes in the last reap pass, workers' renewals too"
    assert "refuses writes" in str(first.advance_failed)


@pytest.mark.usefixtures("entry_left")
def test_a_supervisor_says_advancing_workflows_failed(redis_url: str, key_prefix: str) -> None:
    supervisor = Command(
        redis_url, key_prefix, "threadmill_worker", "--processes", "1", "--queue", "reports",
        "--reap-interval", "0.3", code=LOST_AS_AN_ENTRY_GOES,
    )  # fmt: skip
    said = rf"{re.escape(FAILED)} error=Redis at \S+ {LOST_AGAIN}|stopped answering"
    with running(supervisor, ready=said):
        assert "stopped answering" not in supervisor.log, supervisor.log
