"""The task list pages newest first, forwards and back, with positions and a total."""

import base64
import html
import json
import re

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from tests.admin.conftest import TASKS_URL, failed_task, successful_task


def link(page: str, element_id: str) -> str | None:
    found = re.search(rf'href="(\?[^"]*)" id="{element_id}"', page)
    return html.unescape(found[1]) if found else None


def ids_on(page: str, task_ids: list[str]) -> list[str]:
    """Return those of ``task_ids`` that ``page`` shows, in page order."""
    return [t for _, t in sorted((page.index(t), t) for t in task_ids if t in page)]


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("django_threadmill.admin.results.LIST_PER_PAGE", 2)


def test_next_and_previous_walk_the_pages(
    operator: Client, backend: ThreadmillTaskBackend, small_pages: None
) -> None:
    task_ids = [successful_task(backend) for _ in range(5)]

    first = operator.get(TASKS_URL).content.decode()
    second = operator.get(TASKS_URL + link(first, "tm-older")).content.decode()
    third = operator.get(TASKS_URL + link(second, "tm-older")).content.decode()
    back = operator.get(TASKS_URL + link(third, "tm-newer")).content.decode()

    assert "Showing 1 to 2 of 5." in first
    assert "Showing 3 to 4 of 5." in second
    assert "Showing 5 to 5 of 5." in third
    assert link(first, "tm-newer") is None
    assert link(third, "tm-older") is None
    pages = [ids_on(p, task_ids) for p in (first, second, third)]
    assert [len(p) for p in pages] == [2, 2, 1]
    assert sorted(t for p in pages for t in p) == sorted(task_ids)
    assert ids_on(back, task_ids) == pages[1]


def test_a_filtered_page_keeps_its_filter_in_the_links(
    operator: Client, backend: ThreadmillTaskBackend, small_pages: None
) -> None:
    failed = [failed_task(backend) for _ in range(3)]
    successful_task(backend)

    first = operator.get(TASKS_URL, {"status": "failed"}).content.decode()
    older = link(first, "tm-older")
    second = operator.get(TASKS_URL + older).content.decode()

    assert "status=failed" in older
    assert "2 matches" in first
    assert len(ids_on(first, failed) + ids_on(second, failed)) == 3


HAND_EDITED = {
    "a time of true": {"t": True, "o": []},
    "an offset of 1e20": {"t": None, "o": [["default", "default", "done", 10**20]]},
}


@pytest.mark.parametrize("status", ["", "finished"])
@pytest.mark.parametrize("parameter", ["cursor", "before"])
@pytest.mark.parametrize("cursor", HAND_EDITED.values(), ids=HAND_EDITED.keys())
def test_a_hand_edited_cursor_shows_the_first_page(
    operator: Client, backend: ThreadmillTaskBackend, cursor: object, parameter: str, status: str
) -> None:
    """A time of true answered 500 (ZCOUNT ... True), an offset of 1e20 a 503 blaming Redis."""
    task_ids = [successful_task(backend) for _ in range(3)]
    text = base64.urlsafe_b64encode(json.dumps(cursor).encode()).decode().rstrip("=")

    response = operator.get(TASKS_URL, {parameter: text, "status": status})

    assert response.status_code == 200, response.content.decode()
    shown = response.content.decode()
    assert "Showing 1 to 3 of 3." in shown
    assert sorted(ids_on(shown, task_ids)) == sorted(task_ids)


def test_previous_after_the_index_shrank_lands_on_a_page_that_exists(
    operator: Client, backend: ThreadmillTaskBackend, small_pages: None
) -> None:
    """A page past the end of an index that results left (expired, purged) led back to itself
    under "Previous": "Nothing here", with the same link again."""
    for _ in range(6):
        failed_task(backend)
    kept = [successful_task(backend) for _ in range(2)]
    shown = operator.get(TASKS_URL, {"status": "finished"}).content.decode()
    for _ in range(3):
        shown = operator.get(TASKS_URL + link(shown, "tm-older")).content.decode()
    assert "Showing 7 to 8 of 8." in shown
    backend.purge_finished("default", TaskResultStatus.FAILED)

    back = operator.get(TASKS_URL + link(shown, "tm-newer")).content.decode()

    assert "Showing 1 to 2 of 2." in back
    assert sorted(ids_on(back, kept)) == sorted(kept)
    assert link(back, "tm-newer") is None


def finished_in_order(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, outcomes: str
) -> list[str]:
    """Finish a task per letter of ``outcomes`` (S: SUCCESSFUL, F: FAILED), newest first: their
    finish times are set a second apart, so the list's order does not hang on the clock."""
    task_ids = [successful_task(backend) if o == "S" else failed_task(backend) for o in outcomes]
    done = backend.broker.queue_keys("default").done
    newest = now_ms() - 60_000
    for n, task_id in enumerate(task_ids):
        redis_client.zadd(done, {task_id: newest - n * 1000}, xx=True)
    return task_ids


def test_previous_on_a_filtered_list_opens_the_page_before(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis, small_pages: None
) -> None:
    """The walk back stopped at the page's first match, so the page it opened began after the
    misses before it: the same rows as the page before, under a later position, and on the
    first page another Previous link to the same rows."""
    task_ids = finished_in_order(backend, redis_client, "SSFFSSFFF")
    first = operator.get(TASKS_URL, {"status": "failed"}).content.decode()
    second = operator.get(TASKS_URL + link(first, "tm-older")).content.decode()
    third = operator.get(TASKS_URL + link(second, "tm-older")).content.decode()
    assert "Read 1 index entries from position 9; 1 match." in third

    back_to_second = operator.get(TASKS_URL + link(third, "tm-newer")).content.decode()
    back_to_first = operator.get(TASKS_URL + link(back_to_second, "tm-newer")).content.decode()

    assert "Read 4 index entries from position 5; 2 matches." in second
    assert "Read 4 index entries from position 5; 2 matches." in back_to_second
    assert ids_on(back_to_second, task_ids) == ids_on(second, task_ids) == task_ids[6:8]
    assert "Read 4 index entries from position 1; 2 matches." in back_to_first
    assert ids_on(back_to_first, task_ids) == ids_on(first, task_ids) == task_ids[2:4]
    assert link(back_to_first, "tm-newer") is None
