"""What an enqueue builds before it sends anything: ids, the TaskResult, validation."""

import uuid
from datetime import datetime
from typing import Any

import pytest
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.ids import new_task_hex
from django_threadmill.codec.results import new_result
from django_threadmill.codec.times import from_ms
from django_threadmill.compat import BaseTaskBackend, InvalidTask, TaskResult, TaskResultStatus
from testproject.example.tasks import echo

ENQUEUED_MS = 1_700_000_000_123


def constructed(args: Any, kwargs: Any) -> TaskResult:
    """Return the TaskResult Django's own constructor builds for a new enqueue."""
    return TaskResult(
        task=echo,
        id="an-id@default",
        status=TaskResultStatus.READY,
        enqueued_at=from_ms(ENQUEUED_MS),
        started_at=None,
        finished_at=None,
        last_attempted_at=None,
        args=list(args),
        kwargs=dict(kwargs),
        backend="default",
        errors=[],
        worker_ids=[],
    )


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((), {}),
        (("text", 1, 2.5, True, None), {"flag": False, "name": "ada"}),
        ([1, 2], {}),
        (((1, 2), {"nested": (3,)}), {}),  # normalised: tuples become lists
        ((b"bytes",), {"raw": b"x"}),  # normalised: UTF-8 bytes become text
        ((), {"a": [1, (2,)]}),
    ],
    ids=["none", "flat", "list", "nested", "bytes", "nested-kwargs"],
)
def test_a_new_result_equals_the_one_djangos_constructor_builds(
    backend: ThreadmillTaskBackend, args: Any, kwargs: Any
) -> None:
    result = new_result(echo, "an-id@default", ENQUEUED_MS, args, kwargs, "default")
    assert result == constructed(args, kwargs)
    assert type(result.args) is list
    assert type(result.kwargs) is dict
    assert result.args is not args  # copies, as before
    assert result.kwargs is not kwargs


def test_an_argument_django_cannot_normalise_is_refused(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(TypeError, match="Unsupported type"):
        new_result(echo, "an-id@default", ENQUEUED_MS, ({1, 2},), {}, "default")


def test_task_ids_are_random_version_4_uuids() -> None:
    hexes = [new_task_hex() for _ in range(1000)]
    assert len(set(hexes)) == 1000
    for value in hexes:
        parsed = uuid.UUID(value)
        assert (parsed.version, parsed.variant, parsed.hex) == (4, uuid.RFC_4122, value)


def test_a_valid_task_is_checked_once(
    backend: ThreadmillTaskBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    checked: list[object] = []
    django_check = BaseTaskBackend.validate_task

    def counting(self: BaseTaskBackend, task: Any) -> None:
        checked.append(task)
        django_check(self, task)

    monkeypatch.setattr(BaseTaskBackend, "validate_task", counting)
    task = echo.using(priority=7)  # checked here, by Django's Task.__post_init__
    for n in range(3):
        task.enqueue(n)
    assert checked == [task]


def test_an_invalid_task_is_refused_at_every_enqueue(backend: ThreadmillTaskBackend) -> None:
    with override_settings(USE_TZ=False):
        naive = echo.using(run_after=datetime(2999, 1, 1))
    for _ in range(2):  # a task with run_after is checked each time: the check reads USE_TZ
        with pytest.raises(InvalidTask, match="run_after must be an aware datetime"):
            naive.enqueue(1)
