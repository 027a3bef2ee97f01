"""The huey instance for the benchmark: Redis storage, results kept."""

import os
from typing import Any

from huey import RedisHuey

from . import HUEY_NAME

huey = RedisHuey(HUEY_NAME, url=os.environ["BENCH_REDIS_URL"], results=True, utc=True)


@huey.task()
def echo(value: Any) -> Any:
    """Return the argument: the benchmark task."""
    return value
