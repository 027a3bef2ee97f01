"""A schedule's ``priority`` outside -100..100 is threadmill.E011, and its hint names the fix.

The hint said only "Point 'task' at a @task bound to backend 'default'", though the task was
right and the schedule's own ``priority`` was what to change.
"""

from django.test import override_settings

from django_threadmill.compat import task_backends
from django_threadmill.schedules.checks import BAD_TASK, schedule_messages
from tests.conftest import tasks_setting


def test_the_hint_of_a_priority_the_task_refuses_names_the_priority(
    redis_url: str, key_prefix: str
) -> None:
    entry = {"task": "tests.schedules.tasks.report", "every": 60, "priority": 500}
    with override_settings(TASKS=tasks_setting(redis_url, key_prefix, schedules={"s": entry})):
        backend = task_backends["default"]
        [error] = schedule_messages(backend.settings, backend.queues)  # type: ignore[attr-defined]
    assert error.id == BAD_TASK
    assert "cannot be scheduled (priority must be" in error.msg
    assert "'priority' a whole number from -100 to 100" in (error.hint or "")
