"""What a page or an action's confirmation says of the tasks past what its walk read is true:
whether there are more is asked from the last task it read, wherever that is now (counted by
position, tasks that workers took while it walked made the tasks behind it look gone), and
"at least" names the limit that stopped it (docs/admin.md, Actions and what they promise)."""

import pytest
import redis
from django.test import Client

from django_threadmill.admin import bulk
from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.admin.conftest import ACTION_URL, TASKS_URL, failed_task, successful_task
from tests.admin.test_actions_while_tasks_move import after_read, small_windows
from tests.admin.test_results_paging import ids_on, link, small_pages
from tests.backend_support import reserve

__all__ = ["small_pages", "small_windows"]  # fixtures imported above, asked for by name


def test_a_confirmation_says_at_least_when_tasks_left_while_it_walked(
    operator: Client,
    backend: ThreadmillTaskBackend,
    small_windows: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The walk stopped at the limit, 2 tasks before the end of what was left: asked by
    position, 2 places too far, the index seemed to end, and the page said "4 tasks", as if
    confirming cancelled every READY task."""
    monkeypatch.setattr(bulk, "MAX_BULK", 4)
    task_ids = [add.enqueue(1, n).id for n in range(8)]
    after_read(monkeypatch, 1, lambda _: [reserve(backend, task_id) for task_id in task_ids[:2]])

    confirm = operator.post(
        ACTION_URL, {"action": "cancel", "across": "1", "status": "ready", "next": TASKS_URL}
    )

    assert confirm.status_code == 200
    assert (
        "<strong>4 tasks</strong>\n  (at least: one action changes at most 4; run it again "
        "for the rest)" in confirm.content.decode()
    )


def test_a_confirmation_stopped_by_the_read_limit_says_so(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Newer results filled the entries one action reads: the page said "0 tasks (at least:
    one action changes at most 10000; run it again for the rest)", and running it again read
    the same entries and never reached the FAILED task behind them."""
    monkeypatch.setattr(bulk, "BULK_SCAN_BUDGET", 3)
    failed_id = failed_task(backend)
    for _ in range(3):
        successful_task(backend)
    # Behind them for sure: results of one millisecond are ordered by id.
    done = backend.broker.queue_keys("default").done
    oldest = min(score for _, score in redis_client.zrange(done, 0, -1, withscores=True))
    redis_client.zadd(done, {failed_id: oldest - 1000}, xx=True)

    confirm = operator.post(
        ACTION_URL, {"action": "requeue", "across": "1", "status": "failed", "next": TASKS_URL}
    )

    assert confirm.status_code == 200
    assert (
        "<strong>0 tasks</strong>\n  (at least: one action reads at most 3 index entries, and "
        "more follow, which running it again may not reach: narrow the filter, or tick them on "
        "the list)\n" in confirm.content.decode()
    )


def test_a_page_links_to_the_next_when_tasks_left_while_it_was_read(
    operator: Client,
    backend: ThreadmillTaskBackend,
    small_pages: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Workers took the 2 tasks shown as the page was read: asked by position, the 2 READY
    tasks behind them were past the end, and the page had no Next link to them."""
    task_ids = [add.enqueue(1, n).id for n in range(4)]
    after_read(monkeypatch, 1, lambda _: [reserve(backend, task_id) for task_id in task_ids[:2]])

    first = operator.get(TASKS_URL, {"status": "ready"}).content.decode()

    assert ids_on(first, task_ids) == task_ids[:2]
    href = link(first, "tm-older")
    assert href is not None, "no Next link"
    second = operator.get(TASKS_URL + href).content.decode()
    assert ids_on(second, task_ids) == task_ids[2:]
