"""A queue's ``held`` or ``threads`` key of another type leaves out its counts, not the page.

A program sharing the key prefix can overwrite them (docs/lifecycle.md, Keys of another type).
The counts of every queue are read in one pipeline, and the one refused reply failed it all:
the queues page showed the backend's block as an error, and the scrape left the backend out
(``threadmill_backend_up`` 0). Now the workers are listed, that key's counts read as none, and a
WARNING names the key.
"""

import logging

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import add
from tests.admin.conftest import QUEUES_URL, logged_in, staff_user
from tests.backend_support import start
from tests.observability.test_metrics_view import TOKEN, scrape, value

WORKER = "web-7.example.com:4242:ab12"


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN}


@pytest.mark.parametrize("kind", ["held", "threads"])
def test_the_queues_page_and_the_scrape_list_the_worker_without_that_keys_counts(
    kind: str,
    db: None,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    caplog: pytest.LogCaptureFixture,
) -> None:
    lease = start(backend, add.enqueue(1, 1).id)
    backend.broker.renew(WORKER, [lease], threads=12)
    key = getattr(backend.broker.queue_keys("default"), kind)
    redis_client.delete(key)
    redis_client.set(key, "junk")
    operator = logged_in(staff_user("operator", "view_queue"))

    with caplog.at_level(logging.WARNING, logger="django_threadmill"):
        response = operator.get(QUEUES_URL)
        found = scrape()

    page = response.content.decode()
    assert response.status_code == 200
    assert "wrong kind" not in page
    assert f"<td>{WORKER}</td><td>web-7.example.com</td><td>4242</td>" in page
    assert value(found, "threadmill_backend_up") == 1
    assert value(found, "threadmill_workers") == 1
    # A count that could not be read is none: 0 in the scrape, a dash on the page for threads.
    held, threads, shown = (0, 12, "12") if kind == "held" else (1, 0, "\N{EN DASH}")
    assert value(found, "threadmill_worker_threads") == threads
    assert f'<td class="num">{shown}</td><td class="num">{held}</td><td>default</td>' in page
    said = (
        "Worker counts skipped, their key holds another type (delete it, or give each project "
        "its own OPTIONS['key_prefix']); the workers are listed without them "
        f"key={key} error=WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    assert [r.getMessage() for r in caplog.records] == [said] * 2
