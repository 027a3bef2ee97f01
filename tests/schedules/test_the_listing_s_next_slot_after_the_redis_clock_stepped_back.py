"""After the Redis clock steps back, the slots it passes again fired already and fire no more
(docs/schedules.md, Timing): ``threadmill_schedules`` listed the next of them as the next slot,
a run that never came, beside a last slot fired after it."""

import io
import re
from datetime import datetime, timedelta

import pytest
from django.core.management import call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.schedules.scheduler import Scheduler
from tests.support import HandClock

AHEAD = timedelta(hours=2)  # how far the Redis clock ran ahead before it was set right


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"schedules": {"tick": {"task": "tests.schedules.tasks.report", "every": 60}}}


def test_the_next_slot_listed_is_the_first_after_the_last_one_fired(
    backend: ThreadmillTaskBackend,
) -> None:
    clock = HandClock(backend.broker.server_time() + AHEAD)
    scheduler = Scheduler(backend.pipeline, clock)
    scheduler.fire_due()  # the first look records the latest slot
    clock.now += timedelta(minutes=1)
    scheduler.fire_due()  # and the next one fires, two hours ahead of Redis's clock set right

    out = io.StringIO()
    call_command("threadmill_schedules", stdout=out)
    found = re.search(r"next=(\S+)  last=(\S+)$", out.getvalue().strip())
    assert found, out.getvalue()
    upcoming, last = map(datetime.fromisoformat, found.groups())
    assert last > backend.broker.server_time() + AHEAD / 2
    assert upcoming == last + timedelta(minutes=1), out.getvalue()
