"""A rediss:// LOCATION at a server that speaks neither TLS nor Redis (an HTTP server, one that
greets with a banner) is named, with the fix, and refused as no wait fixes it.

Such a server answers the TLS handshake with its own bytes, and the probe that follows a failed
call named only a plain Redis there: the rest read "unreachable", and the worker and the reaper
waited for good for a Redis that was never coming.
"""

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import wrong_server as wrong_server_module
from django_threadmill.exceptions import BrokerRefused
from testproject.example.tasks import echo
from tests.servers.redis_server import free_port
from tests.support import Command, wait_until, worker

from .test_wrong_server import OPTIONS, accepts, http_url

__all__ = ["http_url"]  # a fixture shared

HTTP = (
    r"The server at {url} answered HTTP, not TLS \(got '<!DOCTYPE.*'\): is LOCATION "
    r"pointing at an HTTP server\? Point LOCATION at the TLS port of a Redis; nothing was "
    r"written\."
)
BANNER = (
    r"The server at {url} answered neither TLS nor the Redis protocol \(got 'SSH-2\.0-"
    r"OpenSSH_9\.6\\r\\n'\), but LOCATION says rediss://\. Point LOCATION at the TLS port of a "
    r"Redis; nothing was written\."
)
# A server that greets each connection with a line, as SSH and SMTP servers do, then closes it.
GREETER = """
import socket, sys
server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
while True:
    client, _ = server.accept()
    client.sendall(b"SSH-2.0-OpenSSH_9.6\\r\\n")
    client.close()
"""


@pytest.fixture
def greeter_url() -> Iterator[str]:
    """A rediss:// LOCATION where a server that greets with an SSH banner listens."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", GREETER, str(port)])
    try:
        wait_until(lambda: accepts(port), "the greeting server listening")
        yield f"rediss://127.0.0.1:{port}/0"
    finally:
        server.kill()
        server.wait()


@pytest.fixture(params=["http", "greeter"])
def plain_text(request: pytest.FixtureRequest) -> tuple[str, str]:
    """A rediss:// LOCATION at a plain-text server, and the message that names it."""
    if request.param == "http":
        url = request.getfixturevalue("http_url").replace("redis://", "rediss://", 1)
        return url, HTTP.format(url=re.escape(url))
    url = request.getfixturevalue("greeter_url")
    return url, BANNER.format(url=re.escape(url))


def test_enqueue_names_the_server_and_the_fix(plain_text: tuple[str, str], key_prefix: str) -> None:
    url, message = plain_text
    backend = ThreadmillTaskBackend(
        "default", {"LOCATION": url, "OPTIONS": {"key_prefix": key_prefix, **OPTIONS}}
    )
    with pytest.raises(BrokerRefused, match=f"^{message}$"):
        backend.enqueue(echo, [1], {})


def test_the_worker_stops_at_start_naming_it(plain_text: tuple[str, str], key_prefix: str) -> None:
    url, message = plain_text
    command = worker(url, key_prefix, options=OPTIONS)
    try:
        assert command.wait() == 4, command.log  # ExitCode.REFUSED: no restart can help
        assert re.search(message, command.log), command.log
        assert "unreachable" not in command.log
        assert "Traceback" not in command.log
    finally:
        command.close()


def test_check_names_it(http_url: str, key_prefix: str) -> None:
    url = http_url.replace("redis://", "rediss://", 1)
    command = Command(url, key_prefix, "check", "--tag", "threadmill", options=OPTIONS)
    try:
        assert command.wait() == 1, command.log
        assert "threadmill.E004" in command.log
        assert re.search(HTTP.format(url=re.escape(url)), command.log), command.log
    finally:
        command.close()


def test_a_tls_server_that_also_answers_plain_text_is_not_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An HTTPS server answers a plain PING on its TLS port with HTTP (nginx's "plain HTTP
    request was sent to HTTPS port"): it speaks TLS, so its handshake's own error stands."""
    monkeypatch.setattr(wrong_server_module, "_answer", lambda host, port: b"HTTP/1.1 400 Bad")
    monkeypatch.setattr(wrong_server_module, "_speaks_tls", lambda host, port: True)
    assert wrong_server_module.wrong_server("rediss://127.0.0.1:6399/0", "here") is None
