"""Every event loop that enqueues gets its own client and coalescer; an ended loop's are let go.

They once stayed for the life of the process, each holding its Redis connections: a sync view
calling ``async_to_sync(task.aenqueue)`` makes a new loop per call and ran out of sockets.
"""

import asyncio

import redis
from asgiref.sync import async_to_sync

from django_threadmill.backend import ThreadmillTaskBackend
from testproject.example.tasks import echo


def test_ended_loops_close_their_connections_and_are_let_go(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis
) -> None:
    before = len(redis_client.client_list())
    for n in range(10):
        asyncio.run(echo.aenqueue(n))
        async_to_sync(echo.aenqueue)(n)
    # Closed as each loop shut down, not when the garbage collector came by.
    assert len(redis_client.client_list()) == before
    assert len(backend.broker._async_clients) == 1  # the last loop's, dropped at the next
    assert len(backend.pipeline.enqueuer._loops) == 1
