"""TLS: a rediss:// LOCATION works end to end; an untrusted certificate or plain TCP is refused."""

from collections.abc import Iterator
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.compat import TaskResultStatus
from django_threadmill.exceptions import BrokerUnavailable
from tests.support import worker

from . import tasks
from .tls import TlsRedis, tls_redis


@pytest.fixture(scope="module")
def tls_server() -> Iterator[TlsRedis]:
    try:
        with tls_redis() as server:
            yield server
    except RuntimeError as exc:
        pytest.skip(f"this redis-server has no TLS support: {exc}")


@pytest.fixture
def redis_url(tls_server: TlsRedis) -> str:
    return tls_server.url


def other_backend(location: str, key_prefix: str) -> ThreadmillTaskBackend:
    return ThreadmillTaskBackend(
        "default", {"LOCATION": location, "OPTIONS": {"key_prefix": key_prefix}}
    )


def test_tasks_run_over_tls(
    backend: ThreadmillTaskBackend, tls_server: TlsRedis, key_prefix: str, tmp_path: Path
) -> None:
    result = tasks.touch.enqueue(str(tmp_path / "ran"))
    command = worker(tls_server.url, key_prefix, "--burst")
    try:
        assert command.wait(60) == 0, command.log
        assert "redis_version=" in command.log
    finally:
        command.close()
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert (tmp_path / "ran").read_text() == "ran"


def test_untrusted_certificate_is_refused(tls_server: TlsRedis, key_prefix: str) -> None:
    untrusting = other_backend(f"rediss://127.0.0.1:{tls_server.port}/0", key_prefix)
    with pytest.raises(BrokerUnavailable, match=r"certificate verify failed"):
        untrusting.enqueue(tasks.touch, ["x"], {})


def test_plain_tcp_to_the_tls_port_is_refused(tls_server: TlsRedis, key_prefix: str) -> None:
    plain = other_backend(f"redis://127.0.0.1:{tls_server.port}/0", key_prefix)
    with pytest.raises(BrokerUnavailable, match=r"TLS port.*rediss://"):
        plain.enqueue(tasks.touch, ["x"], {})
