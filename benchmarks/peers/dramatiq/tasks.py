"""dramatiq actors for the benchmark: its Redis broker, results stored by the Results middleware.

The AsyncIO middleware runs the `async def` actor (anap): dramatiq 2 starts one event-loop
thread per worker process, and the worker thread that took the message blocks until its
coroutine is done, so a worker has at most --threads tasks in flight, async ones included.
It is idle for the other actors.
"""

import asyncio
import os
import time
from typing import Any

import dramatiq
import redis
from dramatiq.brokers.redis import RedisBroker
from dramatiq.middleware.asyncio import AsyncIO
from dramatiq.results import Results
from dramatiq.results.backends import RedisBackend

from ..base import with_db

REDIS_URL = os.environ["BENCH_REDIS_URL"]
# redis-py 8 caps a connection pool at 100 connections unless told otherwise, and a worker
# thread holds one while it acks or stores a result: at 500 threads (the async rows) stores
# failed with MaxConnectionsError and their results were lost. Connections are made on demand,
# so the echo and sleep rows (at most 32 threads) open no more than they did.
MAX_CONNECTIONS = 1024


def pool(url: str) -> redis.ConnectionPool:
    return redis.ConnectionPool.from_url(url, max_connections=MAX_CONNECTIONS)


broker = RedisBroker(connection_pool=pool(REDIS_URL))
broker.add_middleware(Results(backend=RedisBackend(connection_pool=pool(with_db(REDIS_URL, 1)))))
broker.add_middleware(AsyncIO())
dramatiq.set_broker(broker)


@dramatiq.actor(store_results=True)
def echo(value: Any) -> Any:
    """Return the argument: the benchmark task."""
    return value


@dramatiq.actor(store_results=True)
def nap(value: Any, seconds: float) -> Any:
    """Sleep ``seconds``, then return the argument: an I/O-bound task."""
    time.sleep(seconds)
    return value


@dramatiq.actor(store_results=True)
async def anap(value: Any, seconds: float) -> Any:
    """Await ``asyncio.sleep(seconds)``, then return the argument: an I/O-bound async task."""
    await asyncio.sleep(seconds)
    return value


@dramatiq.actor(store_results=True)
def stamp() -> float:
    """Return the wall clock when the task started, for pickup latency."""
    return time.time()
