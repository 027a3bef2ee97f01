"""An attempt the reaper fails reaches task_finished receivers, like a worker's failure."""

import logging

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from django_threadmill.codec.results import finish_result
from django_threadmill.codec.times import now_ms
from django_threadmill.compat import TASKS_LOGGER_NAME, TaskResult, TaskResultStatus, task_finished
from django_threadmill.exceptions import LeaseExpired
from django_threadmill.observability.signals import said_already, send_guarded
from django_threadmill.worker.reaper import reap_once

from .support import WORKER, run, wait_for_expiry
from .tasks import plain, retried


def test_a_lease_the_reaper_fails_sends_task_finished(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    finished: list[TaskResult],
) -> None:
    task_id = plain.enqueue().id
    run(broker)
    wait_for_expiry(broker, redis_client)

    assert reap_once(backend).failed == 1

    [result] = finished
    assert result.id == task_id
    assert result.status == TaskResultStatus.FAILED
    assert result.worker_ids == [WORKER]
    assert result.finished_at is not None
    assert [error.exception_class for error in result.errors] == [LeaseExpired]


def test_a_lease_the_reaper_retries_sends_nothing_yet(
    backend: ThreadmillTaskBackend,
    broker: Broker,
    redis_client: redis.Redis,
    finished: list[TaskResult],
) -> None:
    retried.enqueue()
    run(broker)
    wait_for_expiry(broker, redis_client)

    assert reap_once(backend).retried == 1
    assert finished == []


def test_only_the_reapers_sends_leave_out_djangos_log_line(
    backend: ThreadmillTaskBackend, caplog: pytest.LogCaptureFixture
) -> None:
    result = plain.enqueue()
    finish_result(result, TaskResultStatus.FAILED, now_ms())
    with caplog.at_level(logging.ERROR, logger=TASKS_LOGGER_NAME):
        with said_already():
            send_guarded(task_finished, ThreadmillTaskBackend, result)
        assert caplog.records == []
        send_guarded(task_finished, ThreadmillTaskBackend, result)  # a worker's, say
    [record] = caplog.records
    assert record.getMessage().endswith(f"id={result.id} path={plain.module_path} state=FAILED")
