"""The task list reads the opening bytes of each payload it lists, and a workflow's page the
state of each step it shows, not their whole records (docs/admin.md, Cost per page view)."""

import json
from urllib.parse import urlencode

import pytest
import redis
from django.test import Client

from django_threadmill.admin import workflows as workflow_pages
from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.payloads import PATH_HEAD_BYTES
from django_threadmill.workflows import group, step
from testproject.example.tasks import echo
from tests.admin.conftest import TASKS_URL, page
from tests.backend_support import succeed
from tests.support import script_calls
from tests.workflows.support import GONE_PATH, renamed_away
from tests.workflows.tasks import number

ECHO = "testproject.example.tasks.echo"
BIG = 200_000  # characters of a big argument or return value
WORKFLOWS_URL = f"{TASKS_URL}workflows/"


def record_key(backend: ThreadmillTaskBackend, task_id: str) -> str:
    key = backend.broker.record_key(task_id)
    assert key is not None
    return key


def big_payloads(backend: ThreadmillTaskBackend, client: redis.Redis, count: int) -> list[str]:
    """Enqueue ``count`` echo tasks whose payloads hold BIG characters, as enqueue writes them
    (max_payload_bytes is 1 MB; hand-written, they need not fit it)."""
    ids = [echo.enqueue(n).id for n in range(count)]
    payload = json.dumps({"path": ECHO, "args": ["x" * BIG], "kwargs": {}}, separators=(",", ":"))
    for task_id in ids:
        client.hset(record_key(backend, task_id), "payload", payload)
    return ids


def test_the_list_reads_the_head_of_each_payload_it_shows(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    bytes_read: list[int],
) -> None:
    """Each row read its whole payload for the task path: 50 rows of 2 MB read 100 MB."""
    big_payloads(backend, redis_client, 60)
    bytes_read[0] = 0

    body = page(operator, TASKS_URL)

    assert body.count(f'<td title="{ECHO}">') == 50
    assert bytes_read[0] < 50 * 2 * PATH_HEAD_BYTES  # 10 MB of payloads before


def test_the_task_path_filter_reads_the_head_of_each_payload(
    operator: Client,
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    bytes_read: list[int],
) -> None:
    """The filter read each payload whole, then the rows read their matches' again."""
    big_payloads(backend, redis_client, 30)
    bytes_read[0] = 0

    body = page(operator, f"{TASKS_URL}?task=echo")

    assert body.count(f'<td title="{ECHO}">') == 30
    assert bytes_read[0] < 30 * 3 * PATH_HEAD_BYTES  # 12 MB of payloads before
    assert f'<td title="{ECHO}">' not in page(operator, f"{TASKS_URL}?task=tasks.add")


def test_a_path_longer_than_the_head_lists_cut_and_filters_by_its_start(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    [task_id] = big_payloads(backend, redis_client, 1)
    long_path = "pkg." + "m" * 2 * PATH_HEAD_BYTES + ".task"
    payload = json.dumps({"path": long_path, "args": [], "kwargs": {}}, separators=(",", ":"))
    redis_client.hset(record_key(backend, task_id), "payload", payload)
    shown = long_path[: PATH_HEAD_BYTES - len('{"path":"')] + "…"

    listed = page(operator, TASKS_URL)
    filtered = page(operator, f"{TASKS_URL}?{urlencode({'task': shown})}")

    assert f'<td title="{shown}">' in listed
    assert f'<td title="{shown}">' in filtered
    assert task_id in filtered


@pytest.mark.parametrize("tasks_options", [{"queue_shards": {"default": 3}}])
def test_a_page_reads_its_rows_with_one_script_call_per_queue_part(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """On a Redis Cluster each call goes to the node of its part's hash tag."""
    big_payloads(backend, redis_client, 30)
    before = script_calls(redis_client)

    body = page(operator, f"{TASKS_URL}?status=ready")

    assert body.count(f'<td title="{ECHO}">') == 30
    assert script_calls(redis_client) - before == 3


def test_the_script_answers_a_record_gone_and_one_of_another_type_apart(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    kept, gone, damaged = big_payloads(backend, redis_client, 3)
    redis_client.delete(record_key(backend, gone))
    redis_client.delete(record_key(backend, damaged))
    redis_client.rpush(record_key(backend, damaged), "x")

    read = backend.broker.cut_fields([kept, gone, damaged], ["state", "payload"], "payload", 10)

    assert read == [[b"ready", b'{"path":"t'], [None, None], None]


def test_a_workflow_page_reads_the_state_of_its_steps_not_their_results(
    operator: Client, backend: ThreadmillTaskBackend, bytes_read: list[int]
) -> None:
    """Each step's record was read whole and its result rebuilt: 200 steps of 1 MB, 200 MB."""
    flow = group(*[step(number, n) for n in range(20)]).enqueue()
    for each in flow.steps:
        succeed(backend, each.task_id, "y" * BIG)
    bytes_read[0] = 0

    body = page(operator, f"{WORKFLOWS_URL}default/{flow.id}/")

    assert body.count(">SUCCESSFUL</span>") == 20
    assert bytes_read[0] < 20 * workflow_pages.CHECKED_BYTES  # 4 MB of results before


def test_a_step_with_a_payload_too_long_to_read_still_says_its_task_does_not_import(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    flow = group(step(number, 1), step(number, 2)).enqueue()
    renamed_away(backend, flow, 0)
    key = record_key(backend, flow.steps[0].task_id)
    stored = json.loads(redis_client.hget(key, "payload") or "")
    redis_client.hset(key, "payload", json.dumps({**stored, "args": ["x" * BIG]}))

    body = page(operator, f"{WORKFLOWS_URL}default/{flow.id}/")

    assert f"Task path &#x27;{GONE_PATH}&#x27; does not import" in body
    assert body.count(">READY</span>") == 2


def test_a_step_whose_record_is_of_another_type_is_named_not_a_500(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    flow = group(step(number, 1), step(number, 2)).enqueue()
    key = record_key(backend, flow.steps[0].task_id)
    redis_client.delete(key)
    redis_client.rpush(key, "x")

    body = page(operator, f"{WORKFLOWS_URL}default/{flow.id}/")

    assert f"its key &#x27;{key}&#x27; holds a list, not a hash" in body
    assert body.count(">READY</span>") == 1  # the other step; the damaged one waits
