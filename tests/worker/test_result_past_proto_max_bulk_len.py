"""A result past Redis's proto-max-bulk-len fails its own task, and only that one
(docs/reliability.md, Redis settings we require).

Redis refused the finish call carrying it for good ("Protocol error: invalid bulk length", or
the connection it then closed), and the ack writer sent that call again and again: the results
beside and behind it were never written, the prefetcher stopped reserving, and a --burst
worker never exited.
"""

from collections.abc import Callable, Iterator

import pytest

from django_threadmill.broker import Broker, Finish, Outcome
from django_threadmill.compat import TaskResultStatus
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import Command

from .support import unstarted_writer
from .tasks import chars, square

MIB = 2**20
LONGEST = MIB + MIB // 2  # characters Redis takes: over 1 MiB, so sent alone once a call failed
REFUSED = (
    "ValueError: The task returned 2097154 bytes of JSON, and Redis refused to store them as "
    "too large: they are past its proto-max-bulk-len (or client-query-buffer-limit). Lower "
    "OPTIONS['max_result_bytes'] below it, so that a result this large fails at once naming "
    "the limit, or raise proto-max-bulk-len in redis.conf (threadmill.W006).\n"
)


@pytest.fixture(scope="module")
def small_bulk_redis() -> Iterator[RedisProcess]:
    """A Redis that takes no argument over 2 MiB, as a managed Redis may be configured."""
    with redis_process("--proto-max-bulk-len", "2mb") as server:
        yield server


@pytest.fixture
def redis_url(small_bulk_redis: RedisProcess) -> str:
    return small_bulk_redis.url


@pytest.mark.parametrize("threads", ["1", "4"])
def test_a_result_past_proto_max_bulk_len_fails_its_task_and_the_rest_are_written(
    start_worker: Callable[..., Command], threads: str
) -> None:
    before = [square.enqueue(n) for n in range(5)]
    refused = chars.enqueue(2 * MIB)  # between its quotes: 2 bytes past proto-max-bulk-len
    taken = chars.enqueue(LONGEST)
    after = [square.enqueue(n) for n in range(5, 10)]

    worker = start_worker("--threads", threads, "--burst")
    assert worker.wait(60) == 0, worker.log

    refused.refresh()
    assert refused.status == TaskResultStatus.FAILED
    [error] = refused.errors
    assert error.exception_class_path == "builtins.ValueError"
    assert error.traceback == REFUSED
    assert (
        f"Result refused by Redis as too large, recording the task FAILED task_id={refused.id} "
        "chars=2097154 error="
    ) in worker.log
    taken.refresh()
    assert taken.return_value == "x" * LONGEST
    for n, result in enumerate([*before, *after]):
        result.refresh()
        assert result.return_value == n * n


def test_a_call_carrying_a_refused_result_writes_the_others(broker: Broker) -> None:
    """One call carries the three outcomes, as a burst of them arrives at the writer."""
    writer = unstarted_writer(broker)
    results = [square.enqueue(3), chars.enqueue(2 * MIB), chars.enqueue(LONGEST)]
    leases = {r.lease.task_id: r.lease for r in broker.acquire("default", 3).reservations}
    values = ["9", '"' + "x" * 2 * MIB + '"', '"' + "x" * LONGEST + '"']
    for result, value in zip(results, values, strict=True):
        lease = leases[result.id]
        finish = Finish(
            lease=lease, outcome=Outcome.SUCCESSFUL, value=value, started_ms=1, finished_ms=2
        )
        writer.submit_finish(finish)

    writer._write(writer._take_all(), {}, flush=False)  # the loop's body: the thread never runs

    assert writer.pending() == 0
    squared, refused, taken = results
    squared.refresh()
    assert squared.return_value == 9
    refused.refresh()
    assert refused.status == TaskResultStatus.FAILED
    assert refused.errors[0].traceback == REFUSED
    taken.refresh()
    assert taken.return_value == "x" * LONGEST


def test_a_refusal_redis_answers_by_closing_the_connection_is_not_logged_as_unreachable(
    start_worker: Callable[..., Command],
) -> None:
    """Redis closes the connection while a value far past the limit is still being written:
    the log line read "Redis at … is unreachable … Start Redis", though it answered a PING."""
    refused = chars.enqueue(8 * MIB)

    worker = start_worker("--burst")
    assert worker.wait(60) == 0, worker.log

    refused.refresh()
    assert refused.status == TaskResultStatus.FAILED
    [logged] = [line for line in worker.log.splitlines() if "Result refused by Redis" in line]
    assert "unreachable" not in logged
