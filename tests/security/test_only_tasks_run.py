"""The worker only ever calls django.tasks Task instances: a payload naming anything else fails."""

import json
import uuid
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import NewTask
from django_threadmill.codec.ids import make_task_id
from tests.support import worker

from . import tasks

# Callables a forged payload might name, each with a command that would leave a marker file.
FORGED = {
    "os.system": "touch {marker}",
    "subprocess.getoutput": "touch {marker}",
    "builtins.eval": "open({marker!r}, 'w')",
    "builtins.exec": "open({marker!r}, 'w')",
    "tests.security.tasks.plain_function": "{marker}",
    "tests.security.tasks.NotATask": "{marker}",
}


def forge(backend: ThreadmillTaskBackend, path: str, argument: str) -> str:
    """Store a payload by hand, as an attacker with write access to Redis could; return its id."""
    task_id = make_task_id(uuid.uuid4().hex, "default")
    payload = json.dumps({"path": path, "args": [argument], "kwargs": {}, "priority": 0})
    new = NewTask(id=task_id, payload=payload, priority=0, run_after_ms=None)
    backend.broker.enqueue("default", [new])
    return task_id


def test_forged_payloads_fail_and_never_run(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    tmp_path: Path,
) -> None:
    forged = {}
    for n, (path, template) in enumerate(FORGED.items()):
        marker = tmp_path / f"forged-{n}"
        forged[forge(backend, path, template.format(marker=str(marker)))] = (path, marker)
    real = tasks.touch.enqueue(str(tmp_path / "real"))
    command = worker(redis_url, key_prefix, "--burst")
    try:
        assert command.wait(60) == 0, command.log
    finally:
        command.close()

    real.refresh()
    assert (tmp_path / "real").exists()
    for task_id, (path, marker) in forged.items():
        assert not marker.exists(), f"{path} was called"
        record = redis_client.hgetall(backend.broker.record_key(task_id) or "")
        assert record["state"] == "failed", path
        error = json.loads(record["error:1"])
        assert error["exception_class_path"] == "django_threadmill.exceptions.NotATask"
        assert f"{path!r} is a " in error["traceback"]
        assert (
            "not a task. Only functions decorated with @task can be enqueued."
            in (error["traceback"])
        )


@pytest.mark.parametrize("path", list(FORGED))
def test_reading_a_forged_result_does_not_call_it(
    backend: ThreadmillTaskBackend, tmp_path: Path, path: str
) -> None:
    marker = tmp_path / "marker"
    task_id = forge(backend, path, FORGED[path].format(marker=str(marker)))
    with pytest.raises(Exception, match=r"not a task"):
        backend.get_result(task_id)
    assert not marker.exists()
