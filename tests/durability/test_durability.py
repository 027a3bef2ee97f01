"""OPTIONS['durability']: enqueue and ack batches wait for a replica or the AOF.

A write Redis applied but could not confirm raises ``BrokerUnavailable``: enqueue reports it,
the ack writer retries the batch (a fenced finish makes the retry harmless).
"""

from dataclasses import replace

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Finish, Outcome
from django_threadmill.checks import check_redis
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TaskResultStatus
from django_threadmill.conf.settings import Durability
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.backend_support import finish, new_task, start
from tests.servers.redis_server import RedisProcess

SHORT_TIMEOUT = {"durability_timeout": 0.2}  # a missing replica fails fast in these tests


@pytest.fixture
def tasks_options(request: pytest.FixtureRequest) -> dict[str, object]:
    """The mode; on the server that cannot confirm, a short timeout. A server that can keeps
    the default 2 s: a loaded machine's replica missed 0.3 s once (tests/cluster)."""
    cannot_confirm = request.node.callspec.params["redis_url"] == "lone_primary"
    return {**(SHORT_TIMEOUT if cannot_confirm else {}), "durability": request.param}


@pytest.fixture
def redis_url(request: pytest.FixtureRequest) -> str:
    server: RedisProcess = request.getfixturevalue(request.param)
    return server.url


def run_one(backend: ThreadmillTaskBackend) -> str:
    """Enqueue, start and finish one task through the broker; return its final status."""
    result = echo.enqueue("kept")
    finish(backend, start(backend, result.id), Outcome.SUCCESSFUL, '"kept"')
    return echo.get_result(result.id).status


@pytest.mark.parametrize(
    ("redis_url", "tasks_options"),
    [("replicated_primary", "replicated"), ("waitaof_server", "fsync")],
    indirect=True,
)
def test_a_confirmed_mode_stores_and_settles_tasks(backend: ThreadmillTaskBackend) -> None:
    assert run_one(backend) == TaskResultStatus.SUCCESSFUL
    ids = {message.id for message in check_redis(backend)}
    assert not ids & {"threadmill.W003", "threadmill.E005", "threadmill.E006"}


@pytest.mark.parametrize(
    ("redis_url", "tasks_options"), [("lone_primary", "replicated")], indirect=True
)
def test_no_replica_makes_enqueue_fail_naming_the_mode(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(
        BrokerUnavailable,
        match=r"may have applied the write, but durability='replicated' is not met: it was "
        r"not copied to a replica within 0\.2s\. Check that a replica is connected",
    ):
        echo.enqueue("unconfirmed")
    [warning] = [message for message in check_redis(backend) if message.id == "threadmill.W003"]
    assert "no replica is connected" in warning.msg


@pytest.mark.parametrize(
    ("redis_url", "tasks_options"), [("lone_primary", "replicated")], indirect=True
)
def test_an_unconfirmed_ack_batch_raises_and_its_retry_is_fenced(
    backend: ThreadmillTaskBackend,
) -> None:
    local = Broker(replace(backend.settings, durability=Durability.LOCAL))
    task = new_task("default")
    local.enqueue("default", [task])
    [reservation] = local.acquire("default", 1).reservations
    done = Finish(lease=reservation.lease, outcome=Outcome.SUCCESSFUL, value="1",
                  started_ms=now_ms(), finished_ms=now_ms())  # fmt: skip
    with pytest.raises(BrokerUnavailable, match=r"durability='replicated' is not met"):
        backend.broker.finish("worker-1", [done])
    assert local.record(task.id)["state"] == "successful"  # type: ignore[index]
    with pytest.raises(BrokerUnavailable):  # the ack writer's retry: fenced, still unconfirmed
        backend.broker.finish("worker-1", [done])
    assert local.record(task.id)["state"] == "successful"  # type: ignore[index]


@pytest.mark.parametrize(("redis_url", "tasks_options"), [("lone_primary", "fsync")], indirect=True)
def test_fsync_without_waitaof_or_aof_is_a_check_error(backend: ThreadmillTaskBackend) -> None:
    [message] = [m for m in check_redis(backend) if m.id in ("threadmill.E005", "threadmill.E006")]
    version = backend.broker.server_info()["redis_version"]
    if tuple(int(part) for part in version.split(".")[:2]) < (7, 2):
        assert message.id == "threadmill.E005"
        assert f"durability='fsync' needs WAITAOF, which Redis {version} lacks" in message.msg
    else:
        assert message.id == "threadmill.E006"


@pytest.mark.parametrize(
    ("redis_url", "tasks_options"),
    [("replicated_primary", "replicated"), ("lone_primary", "replicated")],
    indirect=True,
)
def test_coalesced_enqueue_of_several_queues_is_confirmed_per_queue(
    backend: ThreadmillTaskBackend,
) -> None:
    """The coalescers' path: one pipeline, one WAIT; without a replica every queue is refused."""
    outcomes = backend.broker.enqueue_groups({q: [new_task(q)] for q in ("default", "emails")})
    if int(backend.broker.server_info()["connected_slaves"]):
        assert [outcome.stored for outcome in outcomes] == [1, 1]  # type: ignore[union-attr]
    else:
        assert [str(o) for o in outcomes] == [str(outcomes[0])] * 2
        assert "durability='replicated' is not met" in str(outcomes[0])
