"""dramatiq actors for the benchmark: its Redis broker, results stored by the Results middleware."""

import os
import time
from typing import Any

import dramatiq
from dramatiq.brokers.redis import RedisBroker
from dramatiq.results import Results
from dramatiq.results.backends import RedisBackend

from ..base import with_db

REDIS_URL = os.environ["BENCH_REDIS_URL"]

broker = RedisBroker(url=REDIS_URL)
broker.add_middleware(Results(backend=RedisBackend(url=with_db(REDIS_URL, 1))))
dramatiq.set_broker(broker)


@dramatiq.actor(store_results=True)
def echo(value: Any) -> Any:
    """Return the argument: the benchmark task."""
    return value


@dramatiq.actor(store_results=True)
def stamp() -> float:
    """Return the wall clock when the task started, for pickup latency."""
    return time.time()
