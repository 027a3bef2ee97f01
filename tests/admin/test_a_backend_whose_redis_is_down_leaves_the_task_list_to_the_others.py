"""One alias's Redis down leaves the task list to the other aliases, naming the one left out
(it answered the whole list with a 503, hiding every task and the filter form)."""

from collections.abc import Iterator

import pytest
from django.test import Client, override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from tests.admin.conftest import TASKS_URL, failed_task, page
from tests.conftest import tasks_setting

DOWN = "redis://127.0.0.1:1/0"  # nothing listens on port 1


@pytest.fixture
def one_alias_down(redis_url: str, key_prefix: str) -> Iterator[None]:
    """TASKS with "default" on the test's Redis and "down" on a Redis nobody answers for."""
    tasks = tasks_setting(redis_url, key_prefix)
    tasks["down"] = {**tasks_setting(DOWN, key_prefix)["default"], "QUEUES": ["archive"]}  # type: ignore[dict-item]
    with override_settings(TASKS=tasks):
        yield


@pytest.mark.parametrize("query", ["", "?status=failed", "?queue=default"])
def test_the_list_shows_the_tasks_of_the_aliases_that_answer(
    operator: Client, backend: ThreadmillTaskBackend, one_alias_down: None, query: str
) -> None:
    task_id = failed_task(backend)

    body = page(operator, TASKS_URL + query)

    assert task_id in body
    assert f"Backend “down” is left out: Redis at {DOWN} is unreachable" in body
    assert 'value="archive"' in body  # its queues can still be chosen, and it is named


def test_a_search_by_id_finds_the_task_in_an_alias_that_answers(
    operator: Client, backend: ThreadmillTaskBackend, one_alias_down: None
) -> None:
    task_id = failed_task(backend)

    body = page(operator, f"{TASKS_URL}?q={task_id.split('@')[0]}")

    assert "1 task with id" in body
    assert "Backend “down” is left out" in body


def test_the_list_of_the_alias_that_is_down_alone_still_answers_503(
    operator: Client, one_alias_down: None
) -> None:
    response = operator.get(TASKS_URL + "?backend=down")

    assert response.status_code == 503
    assert f"Redis at {DOWN} is unreachable" in response.content.decode()
