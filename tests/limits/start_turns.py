"""The start turns pace.lua hands out, read on Redis's clock through ``MONITOR``.

A rate spaces starts on Redis ``TIME`` (docs/schedules.md, Per-queue limits); a task's own
wall-clock stamp comes a round trip and a thread wake later, by an amount the machine's load
decides. On a loaded 2-CPU machine two tasks 50 ms apart by turn stamped 0.7 ms apart, so a
test spacing stamps failed now and then with the product right. Each turn pace.lua hands out
writes the queue's next start (``SET``, one interval after the ``TIME`` of the turn), which
``MONITOR`` shows: the turns are read exactly, whatever the load.
"""

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import redis

from django_threadmill.broker import Broker


@contextmanager
def start_turns(
    redis_url: str, broker: Broker, queue: str, interval_us: int
) -> Iterator[list[int]]:
    """Yield a list that holds, once the block ends, the Redis time (µs) of each start turn of
    ``queue`` taken during the block, in order.

    The ``MONITOR`` connection is read only at the end: what it shows waits in its socket and
    the server's output buffer meanwhile, ended by an ``ECHO`` of a token of the block's own.
    """
    paced = broker.queue_keys(queue).paced
    turns: list[int] = []
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        with client.monitor() as monitor:
            yield turns
            end = f"start-turns-end-{uuid.uuid4().hex}"
            client.echo(end)
            while (seen := monitor.next_command())["command"] != f"ECHO {end}":
                command = seen["command"].split(" ")
                if seen["client_type"] == "lua" and command[:2] == ["SET", paced]:
                    turns.append(round(float(command[2]) * 1000) - interval_us)
    finally:
        client.close()
