"""The wrong server at LOCATION (an HTTP server, a TLS port reached with redis://, a plain Redis
reached with rediss://) is named, with the fix, by enqueue, manage.py check, the worker and the
reaper: our BrokerRefused, never redis-py's parse error and its traceback, and the commands that
wait for Redis stop at start (exit 4), as no wait fixes it."""

import re
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import wrong_server as wrong_server_module
from django_threadmill.exceptions import BrokerRefused
from testproject.example.tasks import echo
from tests.security.tls import tls_redis
from tests.servers.redis_server import free_port, redis_process
from tests.support import Command, wait_until, worker

# A TLS handshake with a plain Redis waits for an answer that never comes, for socket_timeout
# (10 s by default): half a second is enough to tell each wrong server here.
OPTIONS = {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}
HTTP = (
    r"The server at {url} answered with something that is not the Redis protocol \(got "
    r"'<!DOCTYPE.*'\)\. Is LOCATION pointing at an HTTP server\? Point LOCATION at Redis; "
    r"nothing was written\."
)
TLS_PORT = (
    r"The server at {url} is a TLS port, but LOCATION says redis://\. Use rediss:// for it, with "
    r"'\?ssl_ca_certs=/path/ca\.crt' if a private CA signed its certificate; nothing was "
    r"written\."
)
PLAIN_REDIS = (
    r"The server at {url} answered the Redis protocol without TLS, but LOCATION says "
    r"rediss://\. Use redis:// for it, or the port of its TLS listener; nothing was written\."
)


def accepts(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


@pytest.fixture
def http_url() -> Iterator[str]:
    """A redis:// LOCATION where python -m http.server listens."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until(lambda: accepts(port), "the HTTP server listening")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.kill()
        server.wait()


@pytest.fixture
def tls_port_url() -> Iterator[str]:
    """A redis:// LOCATION at a Redis that speaks TLS only."""
    try:
        with tls_redis() as server:
            yield f"redis://127.0.0.1:{server.port}/0"
    except RuntimeError as exc:
        pytest.skip(f"this redis-server has no TLS support: {exc}")


@pytest.fixture
def plain_as_tls_url() -> Iterator[str]:
    """A rediss:// LOCATION at a Redis without TLS."""
    with redis_process() as server:
        yield f"rediss://127.0.0.1:{server.port}/0"


@pytest.fixture(params=["http", "tls_port", "plain_as_tls"])
def wrong(request: pytest.FixtureRequest) -> tuple[str, str]:
    """A LOCATION with the wrong server behind it, and the message that names it."""
    url = request.getfixturevalue(f"{request.param}_url")
    message = {"http": HTTP, "tls_port": TLS_PORT, "plain_as_tls": PLAIN_REDIS}[request.param]
    return url, message.format(url=re.escape(url))


def test_enqueue_names_the_server_and_the_fix(wrong: tuple[str, str], key_prefix: str) -> None:
    url, message = wrong
    backend = ThreadmillTaskBackend(
        "default", {"LOCATION": url, "OPTIONS": {"key_prefix": key_prefix, **OPTIONS}}
    )
    with pytest.raises(BrokerRefused, match=f"^{message}$"):
        backend.enqueue(echo, [1], {})


@pytest.mark.parametrize(
    ("args", "code"),
    [(("check", "--tag", "threadmill"), 1), (("threadmill_reap", "--once"), 4)],
    ids=["check", "reaper"],
)
def test_commands_exit_naming_it(
    wrong: tuple[str, str], key_prefix: str, args: tuple[str, ...], code: int
) -> None:
    url, message = wrong
    command = Command(url, key_prefix, *args, options=OPTIONS)
    try:
        assert command.wait() == code, command.log
        assert "threadmill.E004" in command.log
        assert re.search(message, command.log), command.log
        assert "Traceback" not in command.log
    finally:
        command.close()


def test_the_worker_stops_at_start_naming_it(wrong: tuple[str, str], key_prefix: str) -> None:
    url, message = wrong
    command = worker(url, key_prefix, options=OPTIONS)
    try:
        assert command.wait() == 4, command.log  # ExitCode.REFUSED: no restart can help
        assert re.search(message, command.log), command.log
        assert "retrying" not in command.log
        assert "Traceback" not in command.log
    finally:
        command.close()


@pytest.mark.parametrize(
    ("answers", "named"),
    [([b"", b""], True), ([b"", b"+PONG\r\n"], False), ([b"", None], False)],
    ids=["closed-twice", "redis-back", "gone"],
)
def test_a_connection_closed_unanswered_is_looked_at_twice(
    monkeypatch: pytest.MonkeyPatch, answers: list[bytes | None], named: bool
) -> None:
    """A Redis restarting closes some connections unanswered: taken for no Redis, an enqueue
    it may have stored was reported as written nowhere."""
    looks = iter(answers)
    monkeypatch.setattr(wrong_server_module, "SECOND_LOOK_S", 0)
    monkeypatch.setattr(wrong_server_module, "_answer", lambda host, port: next(looks))
    monkeypatch.setattr(wrong_server_module, "_speaks_tls", lambda host, port: False)
    verdict = wrong_server_module.wrong_server("redis://127.0.0.1:6399/0", "here")
    assert (verdict is not None) == named
    assert next(looks, "all looked at") == "all looked at"
