"""``threadmill_queue purge`` while a queue's workflow outbox holds a big group's steps.

A purge keeps a workflow step whose workflow has not advanced from it yet, and to tell which
they are purge.lua read the queue's outbox. It read all of it, in every call that met a step:
with a group of 200,000 steps cancelled while no worker drained (or a big group ending faster
than its drainer advances), each call of 500 results held Redis for 130-220 ms, and the purge
of those 200,000 results took 84 s of Redis time where it now takes 1. A call now reads the
outbox only while it holds at most 1,000 ids; past that, it keeps every workflow step it
meets, for a purge once the outbox is drained, and still deletes every other result.

The reads are counted on ``MONITOR``, as the commands the scripts sent: no timing.
"""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.testing import drain
from django_threadmill.workflows import group, step
from testproject.example.tasks import echo
from tests.support import run_python

OUTBOX_READ = 1_000  # most outbox ids one purge.lua call reads
STEPS = 1_500  # a group cancelled while no worker came: that many outbox entries
PLAIN = 10  # cancelled tasks of no workflow, which every purge deletes


@contextmanager
def outbox_reads(redis_url: str, outbox: str, length: int) -> Iterator[list[int]]:
    """Yield a list that holds, once the block ends, how many ids of ``outbox`` (``length``
    long all along) each LRANGE a script sent on it during the block read.

    The ``MONITOR`` connection is read only at the end, up to an ``ECHO`` of the block's own.
    """
    reads: list[int] = []
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        with client.monitor() as monitor:
            yield reads
            end = f"outbox-reads-end-{uuid.uuid4().hex}"
            client.echo(end)
            while (seen := monitor.next_command())["command"] != f"ECHO {end}":
                command = seen["command"].split(" ")
                if seen["client_type"] == "lua" and command[:2] == ["LRANGE", outbox]:
                    first, last = (int(n) if int(n) >= 0 else length + int(n) for n in command[2:])
                    reads.append(max(0, min(last, length - 1) - first + 1))
    finally:
        client.close()


def test_a_purge_reads_a_bounded_part_of_a_long_outbox_and_keeps_the_steps_for_later(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str
) -> None:
    flow = group(*(step(echo, n) for n in range(STEPS))).enqueue()
    assert flow.cancel("the operator stopped the import")
    for n in range(PLAIN):
        assert backend.cancel(echo.enqueue(n).id, "not needed")
    keys = backend.broker.queue_keys("default")
    assert backend.broker.client.llen(keys.outbox) == STEPS
    assert backend.broker.client.zcard(keys.done) == STEPS + PLAIN

    with outbox_reads(redis_url, keys.outbox, STEPS) as reads:
        purge = run_python(
            "manage.py",
            "threadmill_queue",
            "purge",
            "default",
            redis_url=redis_url,
            key_prefix=key_prefix,
        )

    assert purge.returncode == 0, purge.stderr
    assert f"Purged {PLAIN} finished results" in purge.stdout
    # Before, each of the purge's four calls read the whole outbox: 1,500 ids each.
    assert all(read <= OUTBOX_READ for read in reads), reads
    # The steps stay, their workflow not yet advanced from them; the other results are gone.
    assert backend.broker.client.llen(keys.outbox) == STEPS
    assert backend.broker.client.zcard(keys.done) == STEPS

    drain()  # advances the workflow from each step and empties the outbox

    flow.refresh()
    assert flow.why.startswith("cancelled")
    assert backend.broker.client.llen(keys.outbox) == 0
    assert backend.purge_finished("default") == STEPS  # advanced from: now they go
