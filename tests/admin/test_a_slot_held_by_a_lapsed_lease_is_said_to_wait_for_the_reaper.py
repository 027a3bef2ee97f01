"""The queues page counts a concurrency limit's slots as acquire does, and says which only a
lapsed lease holds.

A worker killed while it ran a task of a limited queue (SIGKILL, the OOM killer, its host
gone) keeps the slot until a reaper settles the lease, up to ``--reap-interval`` after it
lapsed, and for good where no reaper runs: the page said "1 of 1 slots held" as for a task
running, and the queue stood still with nothing saying why (docs/schedules.md, Per-queue
limits).
"""

import pytest
import redis
from django.test import Client

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.worker.reaper import reap_once
from testproject.example.tasks import slow
from tests.admin.conftest import QUEUES_URL
from tests.backend_support import start
from tests.support import wait_until


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"queue_limits": {"reports": {"concurrency": 2}}, "lease_ttl": 1}


def test_a_lapsed_lease_holds_its_slot_until_the_reap_and_the_page_says_so(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    start(backend, slow.enqueue(1).id)  # its worker is gone: nobody renews the lease
    slow.enqueue(1)
    leases = backend.broker.queue_keys("reports").leases

    def lapsed() -> bool:
        seconds, micros = redis_client.time()
        [(_, deadline)] = redis_client.zrange(leases, 0, -1, withscores=True)
        return deadline < seconds * 1000 + micros // 1000

    wait_until(lapsed, "the lease lapses")
    page = operator.get(QUEUES_URL).content.decode()
    assert "<td>1 of 2 slots held (1 by a lapsed lease: the next reap frees it)</td>" in page

    reap_once(backend)
    page = operator.get(QUEUES_URL).content.decode()
    assert "<td>0 of 2 slots held</td>" in page


def test_slots_are_counted_as_acquire_counts_them_every_lease_of_the_queue(
    operator: Client, backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    """A lease whose record is gone still holds its slot until a reap drops it: the page,
    which summed the states of the leased records (an estimate above 1,000 leases), said none
    was held while the queue's next task waited for it."""
    lease = start(backend, slow.enqueue(1).id)
    redis_client.delete(backend.broker.queue_keys("reports").record(lease.task_id))
    page = operator.get(QUEUES_URL).content.decode()
    assert "<td>1 of 2 slots held</td>" in page
