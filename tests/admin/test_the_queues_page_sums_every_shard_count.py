"""The queues page after a change of ``queue_shards`` sums the queue's every shard count: its
counts, its workers and the last hour's charts (docs/scaling.md, Changing the shard count).

Before, it read only the count the settings give: the tasks still waiting or running under
the earlier count, the workers serving it and its last hour vanished from the page at the
deploy, while the Prometheus counters summed every count.
"""

import pytest
import redis
from django.test import Client, override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Start
from django_threadmill.codec.times import now_ms
from django_threadmill.testing import drain
from testproject.example.tasks import add, fail
from tests.admin.conftest import QUEUES_URL, page
from tests.admin.test_activity import ADD
from tests.admin.test_counts_and_charts import chart, path_row, queue_row
from tests.conftest import tasks_setting
from tests.support import command_calls

EARLIER = {"queue_shards": {"default": 3}}  # the count the package's backend stores under
SERVING = "web-7.example.com:4242:ab12"  # a worker of the earlier count


@pytest.mark.parametrize("tasks_options", [EARLIER])
def test_the_queues_page_sums_the_earlier_counts_tasks_workers_and_last_hour(
    operator: Client, backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    for n in range(9):
        add.enqueue(n, 1)
    for _ in range(3):
        fail.enqueue("no")
    drain()
    add.enqueue(0, 0)
    [reservation] = backend.broker.acquire("default", 3).reservations
    assert (
        backend.broker.start(SERVING, [Start(lease=reservation.lease, started_ms=now_ms())]) == []
    )
    backend.broker.renew(SERVING, [reservation.lease], threads=12)
    for n in range(4):
        add.enqueue(n, 2)

    with override_settings(TASKS=tasks_setting(redis_url, key_prefix)):  # "default" unsharded
        add.enqueue(1, 1)
        html = page(operator, QUEUES_URL)

    assert "shards)" not in html  # the count the settings give
    assert queue_row(html, "default")[:7] == ["5", "0", "0", "1", "9", "3", "12.0"]
    assert "All time in this queue: 9 successful, 3 failed, 0 retried." in html
    assert f"<td>{SERVING}</td>" in html
    assert '<td class="num">12</td><td class="num">1</td>' in html  # threads, tasks held
    assert "9 successful, 3 failed (25.0% failed)" in chart(html, "default")
    assert path_row(html, ADD)[:2] == ["9", "0"]


def test_a_view_of_the_queues_page_reads_the_recorded_counts_once(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    add.enqueue(1, 1)
    page(operator, QUEUES_URL)  # the scripts loaded, the queues registered
    redis_client.config_resetstat()

    page(operator, QUEUES_URL)

    # The queues seen, and the shard counts recorded: once, for the counts and the damaged
    # records alike.
    assert command_calls(redis_client)["smembers"] == 2
