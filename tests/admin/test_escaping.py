"""Nothing a task stored reaches the page as HTML or script; raw values are plain text."""

import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo
from tests.admin.conftest import TASKS_URL, detail_url
from tests.backend_support import fail, succeed

SCRIPT = "<script>alert('owned')</script>"


def test_args_result_and_error_are_escaped(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    succeeded = echo.enqueue(SCRIPT).id
    succeed(backend, succeeded, {"html": SCRIPT})
    failed = echo.enqueue(SCRIPT).id
    fail(backend, failed, ValueError(SCRIPT))

    pages = [operator.get(detail_url(t)).content.decode() for t in (succeeded, failed)]
    pages.append(operator.get(TASKS_URL).content.decode())

    for page in pages:
        assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&#x27;owned&#x27;)&lt;/script&gt;" in pages[0]
    assert "ValueError: &lt;script&gt;" in pages[1]


def test_a_stored_task_path_and_queue_search_are_escaped(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    task_id = echo.enqueue(1).id
    succeed(backend, task_id, 1)
    payload = '{"path":"<img src=x onerror=alert(1)>","args":[],"kwargs":{}}'
    redis_client.hset(backend.broker.queue_keys("default").record(task_id), "payload", payload)

    listing = operator.get(TASKS_URL).content.decode()
    detail = operator.get(detail_url(task_id)).content.decode()
    search = operator.get(TASKS_URL, {"q": SCRIPT, "task": SCRIPT}).content.decode()

    for page in (listing, detail, search):
        assert "<img src=x" not in page
        assert "<script>alert" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in listing


def test_show_all_serves_plain_text_the_browser_will_not_sniff(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    task_id = echo.enqueue(SCRIPT).id
    succeed(backend, task_id, SCRIPT)

    response = operator.get(detail_url(task_id) + "raw/result/")

    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "sandbox" in response["Content-Security-Policy"]
    assert operator.get(detail_url(task_id) + "raw/nonsense/").status_code == 404


def test_a_lone_surrogate_a_task_stored_is_shown_as_its_escape(
    operator: Client, backend: ThreadmillTaskBackend
) -> None:
    # A file name that is not UTF-8, as os.fsdecode hands it over, round-trips through a task's
    # JSON; each page showing it answered 500 when Django encoded the page as UTF-8.
    name = "report \udcff.pdf"
    succeeded = echo.enqueue(name).id
    succeed(backend, succeeded, {"file": name})
    failed = echo.enqueue(name).id
    fail(backend, failed, ValueError(name))
    urls = [
        detail_url(succeeded),
        detail_url(failed),
        detail_url(succeeded) + "raw/args/",
        detail_url(succeeded) + "raw/result/",
        detail_url(failed) + "raw/traceback:1/",
    ]

    responses = [operator.get(url) for url in urls]

    assert [response.status_code for response in responses] == [200] * len(urls)
    for response in responses:
        assert "report \\udcff.pdf" in response.content.decode(), response.request["PATH_INFO"]
    assert operator.get(TASKS_URL).status_code == 200
