"""The task list pages from the last task each list showed, so a walk through queues that move
(tasks start, finish, arrive, are requeued or cancelled) never repeats or skips a task that
stayed listed."""

import base64
import json
from datetime import UTC, datetime, timedelta

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.admin.conftest import TASKS_URL, page
from tests.admin.test_results_paging import finished_in_order, ids_on, link, small_pages
from tests.backend_support import reserve

__all__ = ["small_pages"]  # the fixture imported above, which the tests ask for by name


def ready_tasks(count: int) -> list[str]:
    """Enqueue ``count`` tasks: READY, in this run order."""
    return [add.enqueue(1, n).id for n in range(count)]


def next_page(client: Client, page: str, which: str = "tm-older") -> str:
    href = link(page, which)
    assert href is not None, f"no {which} link"
    return client.get(TASKS_URL + href).content.decode()


def test_tasks_leaving_the_ready_list_between_pages_skip_none(
    operator: Client, backend: ThreadmillTaskBackend, small_pages: None
) -> None:
    """Paged by position, page 2 began two places too far once a worker took the first two."""
    task_ids = ready_tasks(6)
    first = operator.get(TASKS_URL, {"status": "ready"}).content.decode()
    for task_id in task_ids[:2]:
        reserve(backend, task_id)

    second = next_page(operator, first)

    assert ids_on(first, task_ids) == task_ids[:2]
    assert ids_on(second, task_ids) == task_ids[2:4]


def test_tasks_arriving_ahead_between_pages_repeat_none(
    operator: Client, backend: ThreadmillTaskBackend, small_pages: None
) -> None:
    task_ids = ready_tasks(4)
    first = operator.get(TASKS_URL, {"status": "ready"}).content.decode()
    urgent = [add.using(priority=10).enqueue(0, n).id for n in range(2)]

    second = next_page(operator, first)

    assert ids_on(second, task_ids + urgent) == task_ids[2:4]


def test_results_requeued_between_pages_skip_none(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, small_pages: None
) -> None:
    """A requeue takes a result out of the finished list: later pages moved up a place."""
    task_ids = finished_in_order(backend, redis_client, "FFFFFF")
    first = operator.get(TASKS_URL, {"status": "finished"}).content.decode()
    assert backend.broker.requeue(task_ids[0]) == "requeued"

    second = next_page(operator, first)
    back = next_page(operator, second, "tm-newer")

    assert ids_on(second, task_ids) == task_ids[2:4]
    assert ids_on(back, task_ids) == task_ids[1:3]  # the first page, as it is now
    assert link(back, "tm-newer") is None


def test_a_task_leaving_among_others_due_at_the_same_time_skips_none(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, small_pages: None
) -> None:
    """Tasks due at one time are ordered by id: the one a page ended on, cancelled, is placed
    among them by its id."""
    due = datetime.now(UTC) + timedelta(hours=1)
    enqueued = {add.using(run_after=due).enqueue(1, n).id for n in range(6)}
    in_order = redis_client.zrange(backend.broker.queue_keys("default").delayed, 0, -1)
    assert sorted(enqueued) == in_order  # one score: ordered by id
    first = operator.get(TASKS_URL, {"status": "delayed"}).content.decode()
    assert backend.cancel(in_order[1])

    second = next_page(operator, first)

    assert ids_on(second, in_order) == in_order[2:4]


def test_previous_after_tasks_left_opens_the_rows_before_the_page(
    operator: Client, backend: ThreadmillTaskBackend, small_pages: None
) -> None:
    task_ids = ready_tasks(6)
    first = operator.get(TASKS_URL, {"status": "ready"}).content.decode()
    third = next_page(operator, next_page(operator, first))
    for task_id in task_ids[:2]:
        reserve(backend, task_id)

    back = next_page(operator, third, "tm-newer")

    assert ids_on(third, task_ids) == task_ids[4:6]
    assert ids_on(back, task_ids) == task_ids[2:4]
    assert "Showing 1 to 2 of 4." in back


HAND_MADE_MARKS = {
    "a score of text": ["x", "a@default"],
    "a score of NaN": [float("nan"), "a@default"],
    "a score past a float": [10**400, "a@default"],
    "an id of a number": [1.0, 5],
}


@pytest.mark.parametrize("mark", HAND_MADE_MARKS.values(), ids=HAND_MADE_MARKS.keys())
def test_a_hand_edited_mark_shows_the_first_page(
    operator: Client, backend: ThreadmillTaskBackend, mark: list[object]
) -> None:
    task_ids = ready_tasks(3)
    cursor = {"t": None, "o": [["default", "default", "ready", 2, *mark]]}
    text = base64.urlsafe_b64encode(json.dumps(cursor).encode()).decode().rstrip("=")

    shown = page(operator, f"{TASKS_URL}?status=ready&cursor={text}")

    assert "Showing 1 to 3 of 3." in shown
    assert ids_on(shown, task_ids) == task_ids
