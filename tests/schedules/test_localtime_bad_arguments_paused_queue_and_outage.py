"""Four gaps of schedules: a "localtime" zone, a listing blind to arguments every slot refuses
and to a paused queue, and a scheduler that retried a Redis outage every second."""

import io
import logging
import re
import time

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import task_backends
from django_threadmill.worker.chores import Chores
from django_threadmill.worker.wakeup import WakeupPipe
from tests.conftest import tasks_setting
from tests.servers.redis_server import redis_process
from tests.worker.support import worker_options

NIGHTLY = {"task": "tests.schedules.tasks.report", "cron": "0 3 * * *"}
TICK = {"task": "tests.schedules.tasks.report", "every": 60}


def listing() -> list[str]:
    """Run threadmill_schedules as call_command does: with the checks skipped."""
    out = io.StringIO()
    call_command("threadmill_schedules", stdout=out)
    return out.getvalue().splitlines()


@pytest.mark.parametrize(
    ("time_zone", "schedule", "given"),
    [
        ("UTC", {**NIGHTLY, "timezone": "localtime"}, "its 'timezone'"),
        ("localtime", NIGHTLY, "TIME_ZONE"),
    ],
)
def test_the_hosts_localtime_is_refused_as_a_schedules_zone(
    redis_url: str, key_prefix: str, time_zone: str, schedule: dict[str, object], given: str
) -> None:
    """zoneinfo reads "localtime" from each host's /etc/localtime: supervisors on hosts in
    other zones fired each slot at another instant, which TIME_ZONE = None is refused for."""
    tasks = tasks_setting(redis_url, key_prefix, schedules={"nightly": schedule})
    with (
        override_settings(TIME_ZONE=time_zone, TASKS=tasks),
        pytest.raises(SystemCheckError) as raised,
    ):
        call_command("check")
    message = str(raised.value)
    assert (
        "threadmill.E010) TASKS['default']['OPTIONS']['schedules']['nightly']: its time zone "
        f"({given}) is 'localtime', the host's /etc/localtime, which differs from host to host"
    ) in message
    assert "Name the zone instead, such as 'Europe/Berlin'." in message

    with override_settings(TIME_ZONE=time_zone, TASKS=tasks):
        [line] = listing()
    assert "never fires: its time zone" in line


def test_an_every_schedule_under_time_zone_localtime_is_listed_in_utc(
    redis_url: str, key_prefix: str
) -> None:
    """Its slots are the same in every zone, so the host's zone is not refused for it."""
    tasks = tasks_setting(redis_url, key_prefix, schedules={"tick": TICK})
    with override_settings(TIME_ZONE="localtime", TASKS=tasks):
        call_command("check")
        [line] = listing()
    assert line.startswith("tick  every 0:01:00 (UTC)  task=tests.schedules.tasks.report")


def test_arguments_every_slot_refuses_are_listed_as_never_firing(
    redis_url: str, key_prefix: str
) -> None:
    """Under --skip-checks, args that are not JSON (threadmill.E014) or too large (E016) were
    listed with a next slot, though each slot's enqueue refuses them."""
    schedules = {
        "huge": {**TICK, "kwargs": {"kind": "x" * 2000}},
        "unstorable": {**TICK, "args": [{1, 2}]},
        "tick": TICK,
    }
    tasks = tasks_setting(redis_url, key_prefix, schedules=schedules, max_payload_bytes=1000)
    with override_settings(TASKS=tasks):
        huge, unstorable, tick = listing()
    assert huge.startswith(
        "huge  every 0:01:00  task=tests.schedules.tasks.report  never fires: args and kwargs "
        "would fail every slot (Task 'tests.schedules.tasks.report' payload is "
    )
    assert "above max_payload_bytes=1000" in huge
    assert unstorable.startswith(
        "unstorable  every 0:01:00  task=tests.schedules.tasks.report  never fires: args or "
        "kwargs are not JSON ("
    )
    assert unstorable.endswith("). manage.py check names the fix.")
    assert re.fullmatch(r"tick  every 0:01:00 \(UTC\) .* next=\S+  last=never", tick)


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"schedules": {"tick": TICK, "mail": {**TICK, "queue_name": "emails"}}}


def test_a_paused_queue_is_named_beside_its_schedules(backend: ThreadmillTaskBackend) -> None:
    """A paused queue's slots fire on and wait READY (1,440 a day for a per-minute job): the
    listing did not say so."""
    backend.broker.pause("emails", by="ops", reason="mail server down")
    tick, mail = listing()
    assert mail.endswith("last=never  queue paused: its slots' tasks wait until it is resumed")
    assert tick.endswith("last=never")
    backend.broker.resume("emails", by="ops")
    assert listing()[1].endswith("last=never")


def test_the_scheduler_backs_off_while_redis_is_down(
    key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    """It retried every second, one WARNING each time, however long the outage; now it waits
    as the worker's other Redis loops do (REDIS_BACKOFF), and a pass Redis took starts over."""
    wakeup = WakeupPipe()
    with redis_process() as server:
        tasks = tasks_setting(server.url, key_prefix, schedules={"tick": TICK})
        with override_settings(TASKS=tasks):
            backend = task_backends["default"]
            assert isinstance(backend, ThreadmillTaskBackend)
            chores = Chores(worker_options(), backend, wakeup, lambda: False, lambda: None)

            def fire_now() -> float:
                """Fire the schedules as if due; return when that began (monotonic)."""
                began = chores.next_schedule = time.monotonic()
                chores.run_due()
                return began

            server.stop()
            with caplog.at_level(logging.WARNING, "django_threadmill.worker.chores"):
                for _ in range(3):
                    began = fire_now()
                    assert chores.next_schedule is not None
                assert chores.next_schedule >= began + 0.4
                server.start()
                fire_now()
                server.stop()
                fire_now()
            backend.broker.client.close()
    wakeup.close()
    waits = re.findall(r"Schedules not fired retry_in_s=(\S+) error=", caplog.text)
    assert waits == ["0.1", "0.2", "0.4", "0.1"]
