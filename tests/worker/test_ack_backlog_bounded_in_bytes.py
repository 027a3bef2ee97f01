"""Large results that Redis does not take yet hold the prefetcher by their size, not only by
their count (docs/worker.md, Durability window of the ack writer).

The bound was 1,000 outcomes whatever their size: with acks failing (Redis refusing them), a
worker whose tasks returned 2 MiB each ran 200 of them and held their 400 MiB of results in
memory; at max_result_bytes (64 MiB) the bound was 64 GB.
"""

import textwrap

import psutil

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker, Finish, Outcome
from django_threadmill.worker.backpressure import UNWRITTEN_CAP, UNWRITTEN_CHARS_CAP
from django_threadmill.worker.memory import MIB
from tests.support import Command, wait_until

from .support import unstarted_writer
from .tasks import chars, square

RESULT_CHARS = 2 * MIB
TASKS = 100  # well under UNWRITTEN_CAP, 200 MiB of results: their size must hold the worker
# The worker, every ack batch failing as if Redis refused it, while reservations go through
# (the forked worker process inherits the patch).
ACKS_REFUSED = textwrap.dedent(
    """
    import sys
    from django.core.management import execute_from_command_line
    from django_threadmill.broker import Broker
    from django_threadmill.exceptions import BrokerUnavailable

    def refuse(self, *args, **kwargs):
        raise BrokerUnavailable("Redis refused the ack batch (a test's fault)")

    Broker.finish = refuse
    execute_from_command_line(["manage.py", *sys.argv[1:]])
    """
)


def test_unwritten_results_hold_reservations_by_their_size(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    assert TASKS * RESULT_CHARS > 2 * UNWRITTEN_CHARS_CAP
    assert TASKS < UNWRITTEN_CAP
    ids = [chars.enqueue(RESULT_CHARS).id for _ in range(TASKS)]

    def taken() -> int:
        """Count the tasks the worker reserved or ran (a record left READY)."""
        records = [backend.broker.record(task_id) for task_id in ids]
        return sum(record is not None and record["state"] != "ready" for record in records)

    command = Command(
        redis_url, key_prefix, "threadmill_worker", "--processes", "1", "--threads", "1",
        code=ACKS_REFUSED,
    )  # fmt: skip
    try:
        wait_until(
            lambda: "Reserving nothing until acks are written" in command.log or taken() == TASKS,
            "a hold for acks, or every task taken",
            60,
        )

        # Past the bound by one result, plus the buffer (4 for one thread) and the running task.
        most = UNWRITTEN_CHARS_CAP // RESULT_CHARS + 1 + 4 + 1
        assert taken() <= most, f"{taken()} of {TASKS} tasks reserved or run, at most {most}"
        [pid] = command.child_pids()
        resident = psutil.Process(pid).memory_info().rss
        assert resident < TASKS * RESULT_CHARS, f"RSS {resident / MIB:.0f} MiB"  # not all held
    finally:
        command.close()


def test_backlog_chars_count_results_until_written(broker: Broker) -> None:
    writer = unstarted_writer(broker)
    square.enqueue(3)
    square.enqueue(4)
    first, second = [r.lease for r in broker.acquire("default", 2).reservations]
    value = '"' + "x" * 998 + '"'
    writer.submit_finish(
        Finish(lease=first, outcome=Outcome.SUCCESSFUL, value=value, started_ms=1, finished_ms=2)
    )
    written = writer.submit_written(
        Finish(lease=second, outcome=Outcome.SUCCESSFUL, value=value, started_ms=1, finished_ms=2)
    )
    assert writer.backlog_chars() == 2000

    writer._write(writer._take_all(), {}, flush=False)  # the loop's body: the thread never runs

    assert written.is_set()
    assert writer.backlog_chars() == 0
