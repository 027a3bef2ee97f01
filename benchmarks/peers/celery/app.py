"""The celery app for the benchmark: Redis broker, Redis result backend in db 1."""

import os
from typing import Any

from celery import Celery

from ..base import with_db

REDIS_URL = os.environ["BENCH_REDIS_URL"]

app = Celery("bench", broker=REDIS_URL, backend=with_db(REDIS_URL, 1))
app.conf.update(
    task_ignore_result=False,
    broker_connection_retry_on_startup=True,
    worker_hijack_root_logger=False,
)


@app.task
def echo(value: Any) -> Any:
    """Return the argument: the benchmark task."""
    return value
