"""A forged task path imports no module that runs a program; a settings repr shows no password.

A stored path is imported to learn whether it names a task, so a payload written into Redis by
hand made the worker and ``get_result`` import any module: ``venv.__main__`` made a virtualenv
from the worker's arguments, ``this`` printed into its log. And the repr of a backend's
settings, which hid LOCATION's password, showed those of OPTIONS['connection_options'].
"""

import inspect
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.codec.payloads import load_task
from django_threadmill.compat import Task
from django_threadmill.conf.settings import read_settings
from django_threadmill.exceptions import NotATask
from tests.support import worker

from .test_only_tasks_run import forge

# redis-py's asyncio SSLConnection takes ssl_password from 7.2 on (tests/conf/test_location.py).
TAKES_SSL_PASSWORD = "ssl_password" in inspect.signature(redis.asyncio.SSLConnection).parameters
# Each forged path, with what its module is said to be in the error.
FORGED = {
    "tests.security.program.__main__.run": "a __main__ module",
    "this.poem": "a module of Python's standard library",
}
PROGRAM = "tests.security.program.__main__"


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The file the program module writes when it is imported."""
    path = tmp_path / "program-ran"
    monkeypatch.setenv("THREADMILL_PROGRAM_MARKER", str(path))
    yield path
    for module in (PROGRAM, "this"):  # imported without the fix: forget them for other tests
        sys.modules.pop(module, None)


def test_the_worker_fails_them_without_importing(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    marker: Path,
) -> None:
    forged = {forge(backend, path, "x"): path for path in FORGED}
    command = worker(
        redis_url,
        key_prefix,
        "--burst",
        extra_env={"THREADMILL_PROGRAM_MARKER": str(marker)},
    )
    try:
        assert command.wait(60) == 0, command.log
        log = command.log
    finally:
        command.close()

    assert not marker.exists()
    assert "Beautiful is better than ugly" not in log
    for task_id, path in forged.items():
        record = redis_client.hgetall(backend.broker.record_key(task_id) or "")
        assert record["state"] == "failed", path
        error = json.loads(record["error:1"])
        assert error["exception_class_path"] == "django_threadmill.exceptions.NotATask"
        assert f"Task path {path!r} is in " in error["traceback"]
        assert (
            f", {FORGED[path]}, where no task is defined; it is not imported"
            in (error["traceback"])
        )


@pytest.mark.parametrize("path", list(FORGED))
def test_reading_one_back_imports_nothing(
    backend: ThreadmillTaskBackend, marker: Path, path: str
) -> None:
    task_id = forge(backend, path, "x")
    module = path.rpartition(".")[0]

    with pytest.raises(NotATask, match=f"{FORGED[path]}, where no task is defined"):
        backend.get_result(task_id)

    assert module not in sys.modules
    assert not marker.exists()


def test_a_project_package_named_like_a_standard_module_still_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "this"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "tasks.py").write_text(
        "from django_threadmill.compat import task\n\n\n@task\ndef poem() -> None:\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("this", "this.tasks"):
        monkeypatch.delitem(sys.modules, module, raising=False)

    found = load_task(
        "this.tasks.poem", backend="default", queue="default", payload={}, validate=False
    )

    assert isinstance(found, Task)
    assert found.module_path == "this.tasks.poem"


def test_the_repr_of_settings_shows_no_password_of_connection_options() -> None:
    options = {"password": "option-pw", "ssl_password": "key-pw", "socket_keepalive": True}
    shown_options = "{'password': '***', 'ssl_password': '***', 'socket_keepalive': True}"
    if not TAKES_SSL_PASSWORD:  # refused: both of redis-py's clients must take a key
        del options["ssl_password"]
        shown_options = "{'password': '***', 'socket_keepalive': True}"
    settings = read_settings(
        "default",
        {
            "LOCATION": "rediss://app:location-pw@127.0.0.1:6380/0",
            "OPTIONS": {"connection_options": options},
        },
    )

    shown = repr(settings)

    assert "-pw" not in shown
    assert f"connection_options={shown_options}" in shown
    assert settings.connection_options["password"] == "option-pw"  # only the repr hides it
