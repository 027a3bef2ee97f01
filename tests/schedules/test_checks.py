"""System checks name each schedule whose timing or task cannot work."""

import sys

import pytest
from django.test import override_settings

from django_threadmill.compat import task_backends
from django_threadmill.schedules.checks import (
    BAD_ARGUMENTS,
    BAD_TASK,
    BAD_TIMING,
    UNIQUE_SCHEDULED,
    UNKNOWN_QUEUE,
    schedule_messages,
)
from tests.conftest import tasks_setting

GOOD = {"task": "tests.schedules.tasks.report", "cron": "0 3 * * *"}


def problems(redis_url: str, key_prefix: str, **schedule: object) -> list[tuple[str, str]]:
    """Return (id, message) of the schedule errors of a backend with one schedule "s"."""
    entry = {key: value for key, value in {**GOOD, **schedule}.items() if value is not None}
    tasks = tasks_setting(redis_url, key_prefix, schedules={"s": entry})
    with override_settings(TASKS=tasks):
        backend = task_backends["default"]
        messages = schedule_messages(backend.settings, backend.queues)  # type: ignore[attr-defined]
        return [(m.id or "", m.msg) for m in messages]


def test_good_schedules_pass(redis_url: str, key_prefix: str) -> None:
    assert problems(redis_url, key_prefix) == []
    assert problems(redis_url, key_prefix, cron=None, every=5) == []


@pytest.mark.parametrize(
    ("schedule", "check_id", "message"),
    [
        ({"cron": "61 * * * *"}, BAD_TIMING, "cron '61 * * * *' does not parse (Bad minute)"),
        ({"timezone": "Mars/Olympus"}, BAD_TIMING, "time zone 'Mars/Olympus' is unknown"),
        (
            {"task": "tests.schedules.tasks.gone"},
            BAD_TASK,
            "task 'tests.schedules.tasks.gone' does not import",
        ),
        (
            {"task": "tests.raises_at_import.task"},
            BAD_TASK,
            "task 'tests.raises_at_import.task' does not import (its module raised "
            "RuntimeError: settings.PAYMENT_API_KEY is not set)",
        ),
        ({"task": "tests.schedules.tasks.not_a_task"}, BAD_TASK, "is a function, not a task"),
        ({"priority": 500}, BAD_TASK, "cannot be scheduled"),
        ({"args": [{1, 2}]}, BAD_ARGUMENTS, "args or kwargs are not JSON"),
        ({"kwargs": {"when": object()}}, BAD_ARGUMENTS, "args or kwargs are not JSON"),
        (
            {"kwargs": {"by_id": {1: "a", "1": "b"}}},
            BAD_ARGUMENTS,
            "args or kwargs are not JSON (keys 1 and '1' of one dict are both the JSON key '1'",
        ),
        (
            {"kwargs": {1: 2}},
            BAD_ARGUMENTS,
            "kwargs would fail every slot (Keyword argument 1 of task "
            "'tests.schedules.tasks.report' is named by an int, not a str. Name keyword "
            "arguments by str)",
        ),
        (
            {"queue_name": "nope"},
            UNKNOWN_QUEUE,
            "queue_name 'nope' is not in QUEUES (default, emails and reports)",
        ),
    ],
)
def test_each_problem_is_an_error_naming_the_schedule(
    redis_url: str, key_prefix: str, schedule: dict[str, object], check_id: str, message: str
) -> None:
    [(found_id, found)] = problems(redis_url, key_prefix, **schedule)
    assert found_id == check_id
    assert found.startswith("TASKS['default']['OPTIONS']['schedules']['s']: ")
    assert message in found


NO_ZONE = (
    "TASKS['default']['OPTIONS']['schedules']['s']: it has no time zone: it sets no 'timezone' "
    "and TIME_ZONE is None, the host's local time, which has no zone name to follow daylight "
    "saving time by. Set TIME_ZONE, or give the schedule a 'timezone' such as 'Europe/Berlin'."
)


@override_settings(TIME_ZONE=None)
def test_a_cron_without_a_time_zone_under_time_zone_none_is_an_error_with_the_fix(
    redis_url: str, key_prefix: str
) -> None:
    """TIME_ZONE = None (the host's local time) made the check raise a bare TypeError."""
    assert problems(redis_url, key_prefix) == [(BAD_TIMING, NO_ZONE)]
    assert problems(redis_url, key_prefix, timezone="Europe/Berlin") == []
    assert problems(redis_url, key_prefix, cron=None, every=5) == []  # the same in every zone


def test_a_task_bound_to_another_backend_is_an_error(redis_url: str, key_prefix: str) -> None:
    tasks = tasks_setting(redis_url, key_prefix)
    tasks["other"] = {
        **tasks["default"],  # type: ignore[dict-item]
        "OPTIONS": {"key_prefix": f"{key_prefix}-o", "schedules": {"s": GOOD}},
    }
    with override_settings(TASKS=tasks):
        other = task_backends["other"]
        [message] = schedule_messages(other.settings, other.queues)  # type: ignore[attr-defined]
    assert message.id == BAD_TASK
    assert "bound to backend 'default', not 'other'" in message.msg


def test_backend_checks_include_schedules(redis_url: str, key_prefix: str) -> None:
    tasks = tasks_setting(redis_url, key_prefix, schedules={"s": {**GOOD, "cron": "bad"}})
    with override_settings(TASKS=tasks):
        ids = [message.id for message in task_backends["default"].check()]
    assert BAD_TIMING in ids


def test_a_queue_not_in_queues_is_an_error_with_the_fix(redis_url: str, key_prefix: str) -> None:
    tasks = tasks_setting(redis_url, key_prefix, schedules={"s": {**GOOD, "queue_name": "emials"}})
    with override_settings(TASKS=tasks):
        [message] = task_backends["default"].check()
    assert message.id == UNKNOWN_QUEUE
    assert message.msg == (
        "TASKS['default']['OPTIONS']['schedules']['s']: queue_name 'emials' is not in QUEUES "
        "(default, emails and reports), so no task can be enqueued to it."
    )
    assert message.hint == "Fix the queue name, or add the queue to TASKS['default']['QUEUES']."


def test_a_unique_task_on_a_schedule_warns_that_slots_do_not_claim_it(
    redis_url: str, key_prefix: str
) -> None:
    [(found_id, found)] = problems(
        redis_url, key_prefix, task="tests.schedules.tasks.unique_report"
    )
    assert found_id == UNIQUE_SCHEDULED
    assert "its task is unique (unique_for), but a slot's enqueue does not claim" in found


def test_a_cron_without_its_extra_is_named_in_one_sentence(
    redis_url: str, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import error's own full stop was quoted before the check's: "[cron].."."""
    monkeypatch.setitem(sys.modules, "cronsim", None)  # import cronsim raises ImportError
    [(check_id, message)] = problems(redis_url, key_prefix)
    assert check_id == BAD_TIMING
    assert message.endswith("need the cronsim package. Install django-threadmill[cron].")


@override_settings(TIME_ZONE="America")
def test_an_unknown_time_zone_setting_is_named_as_time_zone_not_as_none(
    redis_url: str, key_prefix: str
) -> None:
    """A TIME_ZONE that names a directory of zones passes Django's own check (so does a typo
    where /usr/share/zoneinfo is missing); a cron without 'timezone' follows it, and the error
    said "time zone None is unknown"."""
    [(found_id, found)] = problems(redis_url, key_prefix)
    assert found_id == BAD_TIMING
    assert found == (
        "TASKS['default']['OPTIONS']['schedules']['s']: it sets no 'timezone', and TIME_ZONE "
        "'America' is unknown ('No time zone found with key America')."
    )
