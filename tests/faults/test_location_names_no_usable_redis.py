"""LOCATION that names no Redis this client can use: each way is named with its fix, and the
commands stop only where no wait can fix it.

- ``threadmill_health`` exited 3 ("Redis unreachable") for an HTTP server, a TLS-only Redis
  addressed with redis:// and a plain Redis addressed with rediss://, so ``--redis-down-ok``
  passed a liveness probe whose LOCATION can never work; it exits 4 now, as for a password.
- A port that accepts and closes at once (a proxy or Docker's forwarded port with its Redis
  down) was named "no Redis, or a TLS port": it is waited for, named as such.
- On Python 3.13+, a CA made without key usage is refused by strict verification, and the
  message sent the user to set the ssl_ca_certs they had already set.
"""

import inspect
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerRefused, BrokerUnavailable
from testproject.example.tasks import echo
from tests.security.tls import tls_redis
from tests.servers.redis_server import free_port
from tests.support import Command, wait_until, worker

from .test_wrong_server import (
    OPTIONS,
    accepts,
    http_url,
    plain_as_tls_url,
    tls_port_url,
    wrong,
)

__all__ = ["http_url", "plain_as_tls_url", "tls_port_url", "wrong"]  # fixtures shared

CLOSED = (
    r"The server at {url} closed the connection unanswered, at a Redis command and at a TLS "
    r"handshake alike: a proxy or forwarded port \(Docker's, HAProxy\) whose Redis is down or "
    r"missing, or a server that is no Redis\. Start that Redis, or point LOCATION at Redis; "
    r"nothing was written\."
)
# A port that accepts each connection and closes it at once, as Docker's proxy does when the
# container's Redis is down.
CLOSER = """
import socket, sys
server = socket.create_server(("127.0.0.1", int(sys.argv[1])))
while True:
    server.accept()[0].close()
"""
STRICT = (
    r"presented a TLS certificate that strict verification refuses \(certificate verify "
    r"failed: CA cert does not include key usage extension\): Python 3\.13\+ checks "
    r".*keyUsage=critical,keyCertSign,cRLSign.*add ssl_exclude_verify_flags=VERIFY_X509_STRICT "
    r"to LOCATION's query"
)


def health(url: str, key_prefix: str, *args: str) -> Command:
    return Command(url, key_prefix, "threadmill_health", "--timeout", "0.5", *args)


@pytest.mark.parametrize("down_ok", [False, True], ids=["probe", "redis-down-ok"])
def test_health_exits_4_for_a_server_no_wait_fixes(
    wrong: tuple[str, str], key_prefix: str, down_ok: bool
) -> None:
    url, message = wrong
    command = health(url, key_prefix, *(["--redis-down-ok"] if down_ok else []))
    try:
        assert command.wait() == 4, command.log
        assert "Unhealthy host=" in command.log
        assert re.search(message, command.log), command.log
        assert "Traceback" not in command.log
    finally:
        command.close()


@pytest.fixture
def closing_url() -> Iterator[str]:
    """A redis:// LOCATION whose port accepts and closes every connection at once."""
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", CLOSER, str(port)])
    try:
        wait_until(lambda: accepts(port), "the closing port listening")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        server.kill()
        server.wait()


def closed(url: str) -> str:
    return CLOSED.format(url=re.escape(url))


def test_a_port_that_closes_at_once_is_named_and_waited_for(
    closing_url: str, key_prefix: str
) -> None:
    backend = ThreadmillTaskBackend(
        "default", {"LOCATION": closing_url, "OPTIONS": {"key_prefix": key_prefix, **OPTIONS}}
    )
    with pytest.raises(BrokerUnavailable, match=f"^{closed(closing_url)}$") as raised:
        backend.enqueue(echo, [1], {})
    assert not isinstance(raised.value, BrokerRefused)
    command = worker(closing_url, key_prefix, options=OPTIONS)
    try:
        command.wait_for_log(rf"Redis unavailable, retrying in [\d.]+s error={closed(closing_url)}")
        command.signal()
        assert command.wait() == 0, command.log
    finally:
        command.close()


@pytest.mark.parametrize(("down_ok", "code"), [(False, 3), (True, 0)], ids=["probe", "down-ok"])
def test_health_says_unreachable_for_a_port_that_closes_at_once(
    closing_url: str, key_prefix: str, down_ok: bool, code: int
) -> None:
    command = health(closing_url, key_prefix, *(["--redis-down-ok"] if down_ok else []))
    try:
        assert command.wait() == code, command.log
        assert re.search(closed(closing_url), command.log), command.log
    finally:
        command.close()


@pytest.fixture(scope="module")
def ca_without_key_usage() -> Iterator[str]:
    """A rediss:// LOCATION at a TLS Redis whose CA, made without key usage, it trusts."""
    try:
        with tls_redis(ca_key_usage=False) as server:
            yield server.url
    except RuntimeError as exc:
        pytest.skip(f"this redis-server has no TLS support: {exc}")


# redis-py 7.0+ takes ssl_include_verify_flags and ssl_exclude_verify_flags; before, the message
# says to upgrade it.
TAKES_VERIFY_FLAGS = "ssl_exclude_verify_flags" in inspect.signature(redis.SSLConnection).parameters


@pytest.mark.parametrize(
    "query",
    [
        pytest.param(
            "",
            marks=pytest.mark.skipif(
                sys.version_info < (3, 13), reason="strict by default from Python 3.13"
            ),
            id="python-default",
        ),
        pytest.param(
            "&ssl_include_verify_flags=VERIFY_X509_STRICT",
            marks=pytest.mark.skipif(not TAKES_VERIFY_FLAGS, reason="redis-py 7.0+ takes it"),
            id="strict-asked",
        ),
    ],
)
def test_a_ca_strict_verification_refuses_is_named_with_both_fixes(
    ca_without_key_usage: str, key_prefix: str, query: str
) -> None:
    location = ca_without_key_usage + query
    backend = ThreadmillTaskBackend(
        "default", {"LOCATION": location, "OPTIONS": {"key_prefix": key_prefix}}
    )
    with pytest.raises(BrokerRefused, match=STRICT) as refused:
        backend.enqueue(echo, [1], {})
    assert "Set ssl_ca_certs" not in str(refused.value)  # it is set, to the right file
    if not TAKES_VERIFY_FLAGS:
        assert "upgrade redis-py (pip install -U redis) and add" in str(refused.value)
        return
    exempt = ThreadmillTaskBackend(
        "default",
        {
            "LOCATION": f"{location}&ssl_exclude_verify_flags=VERIFY_X509_STRICT",
            "OPTIONS": {"key_prefix": key_prefix},
        },
    )
    assert exempt.enqueue(echo, [1], {}).id  # the fix the message gives works
