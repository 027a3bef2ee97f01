"""A rediss:// LOCATION whose TLS set-up is wrong is refused with the fix, not waited out.

redis-py reports an untrusted certificate or a missing CA file as "Error 1 connecting to …" or
"Error 2 connecting to … No such file or directory.", which read like a Redis that is down: the
worker waited for it forever, logging "Start Redis or fix TASKS LOCATION".
"""

import asyncio
import re

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerRefused
from tests.support import worker

from . import tasks
from .test_tls import other_backend, tls_server
from .tls import TlsRedis

__all__ = ["tls_server"]  # the module-scoped fixture, shared with test_tls

UNTRUSTED = (
    r"presented a TLS certificate this client does not trust \(certificate verify failed: {}\)\. "
    "Set ssl_ca_certs"
)
UNREADABLE = r"A TLS file for Redis at .* cannot be read \(No such file or directory\)\. Check"
UNUSABLE = r"A TLS file for Redis at .* holds no usable certificate or key \(.*{}.*\)\. Point"


def bad_setups(server: TlsRedis) -> dict[str, tuple[str, str]]:
    """Return LOCATIONs with a wrong TLS set-up, each with the message it must raise."""
    base = f"127.0.0.1:{server.port}/0"
    directory = server.ca_file.parent
    garbage = directory / "garbage.pem"
    garbage.write_text("not a certificate\n")
    return {
        "no-ca": (f"rediss://{base}", UNTRUSTED.format("self-signed certificate in .*")),
        "other-host-name": (
            f"rediss://localhost:{server.port}/0?ssl_ca_certs={server.ca_file}",
            UNTRUSTED.format("Hostname mismatch, .*'localhost'.*"),
        ),
        "missing-ca-file": (f"rediss://{base}?ssl_ca_certs={directory}/absent.crt", UNREADABLE),
        "garbage-ca-file": (f"rediss://{base}?ssl_ca_certs={garbage}", UNUSABLE.format("X509")),
        "key-of-another-certificate": (
            f"rediss://{base}?ssl_ca_certs={server.ca_file}"
            f"&ssl_certfile={server.ca_file}&ssl_keyfile={directory}/redis.key",
            UNUSABLE.format("KEY_VALUES_MISMATCH"),
        ),
    }


@pytest.fixture(params=["no-ca", "other-host-name", "missing-ca-file", "garbage-ca-file",
                        "key-of-another-certificate"])  # fmt: skip
def bad_setup(request: pytest.FixtureRequest, tls_server: TlsRedis) -> tuple[str, str]:
    setup: tuple[str, str] = bad_setups(tls_server)[request.param]
    return setup


def test_enqueue_names_the_tls_problem(bad_setup: tuple[str, str], key_prefix: str) -> None:
    location, message = bad_setup
    backend: ThreadmillTaskBackend = other_backend(location, key_prefix)
    with pytest.raises(BrokerRefused, match=message) as refused:
        backend.enqueue(tasks.touch, ["x"], {})
    assert "Start Redis" not in str(refused.value)
    with pytest.raises(BrokerRefused, match=message):
        asyncio.run(backend.aenqueue(tasks.touch, ["x"], {}))


# Not "other-host-name": redis-py's cluster client connects to "localhost" as 127.0.0.1.
@pytest.mark.parametrize("setup", ["no-ca", "missing-ca-file", "garbage-ca-file",
                                   "key-of-another-certificate"])  # fmt: skip
def test_a_cluster_client_names_the_tls_problem(
    setup: str, tls_server: TlsRedis, key_prefix: str
) -> None:
    """redis-py's cluster client wraps the connection error once more ("Redis Cluster cannot
    be connected"): that read as a failover to wait for. No TLS handshake succeeds, so a plain
    TLS server stands in for a cluster node."""
    location, message = bad_setups(tls_server)[setup]
    backend = ThreadmillTaskBackend(
        "default", {"LOCATION": location, "OPTIONS": {"key_prefix": key_prefix, "cluster": True}}
    )
    with pytest.raises(BrokerRefused, match=message) as refused:
        backend.enqueue(tasks.touch, ["x"], {})
    assert "failover" not in str(refused.value)


def test_the_worker_stops_at_start_instead_of_waiting(
    tls_server: TlsRedis, key_prefix: str
) -> None:
    location, message = bad_setups(tls_server)["no-ca"]
    command = worker(location, key_prefix)
    try:
        assert command.wait(60) == 4, command.log  # ExitCode.REFUSED: no restart can help
        assert "threadmill.E004" in command.log
        assert re.search(message, command.log), command.log
        assert "retrying" not in command.log
    finally:
        command.close()
