"""A TLS set-up that fails at the sentinels (their certificate untrusted, a CA file that cannot
be read, a host name their certificate does not hold, no client certificate where they require
one) is refused naming the setting to fix, as it is at the primary: no wait fixes it.

Before, each read "127.0.0.1:… is unreachable (… certificate verify failed …)", a
``BrokerUnavailable`` saying "Wait if a failover is under way": the worker waited for good and
``threadmill_health --redis-down-ok`` passed. A sentinel that requires a client certificate
most often failed redis-py's first write ("EOF occurred in violation of protocol"), its alert
unread.
"""

import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import REFUSED, check_redis
from django_threadmill.compat import task_backends
from django_threadmill.exceptions import BrokerRefused
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.security.tls import make_certificates, refused_by_the_commands
from tests.servers.redis_sentinel import SERVICE

from .test_sentinels_that_take_only_tls_are_reached_over_tls_as_location_says import (
    PASSWORD,
    LockedSentinel,
    TlsPrimary,
    built_with_tls,
)

SET_CA = (
    "set ssl_ca_certs in LOCATION's query or OPTIONS['connection_options'] to the CA file that "
    "signed it (e.g. '?ssl_ca_certs=/etc/redis/ca.crt'), name the host in "
    "OPTIONS['sentinel']['sentinels'] as the certificate does, or renew the certificate if it "
    "expired"
)
SET_CLIENT_CERTIFICATE = (
    "takes no TLS client without a certificate, and this client sent none "
    "(TLSV13_ALERT_CERTIFICATE_REQUIRED): set ssl_certfile and ssl_keyfile in LOCATION's query "
    "or OPTIONS['connection_options'] to a certificate signed by a CA the server trusts (its "
    "tls-ca-cert-file) and its key"
)
CHECK_PATHS = (
    "was not reached: a TLS file cannot be read (No such file or directory): check the paths "
    "of ssl_ca_certs, ssl_certfile or ssl_keyfile in LOCATION's query or "
    "OPTIONS['connection_options'], and that this process's user may read them"
)
REPEATS = 5  # the client-certificate alert races redis-py's first write: each try must name it


class CertifiedSentinel(LockedSentinel):
    """A TLS sentinel that takes only clients with a certificate its CA signed."""

    def arguments(self) -> list[str]:
        return [*super().arguments(), "--tls-auth-clients", "yes"]

    @property
    def url(self) -> str:
        files = self.certificates
        return f"{super().url}&ssl_certfile={files}/redis.crt&ssl_keyfile={files}/redis.key"


@dataclass
class Setup:
    certificates: Path
    other_ca_file: Path  # a CA that signed none of the servers' certificates
    sentinel: LockedSentinel
    certified: CertifiedSentinel


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    if not built_with_tls():
        pytest.skip("this redis-server has no TLS support")
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tm-sentinel-")))
        for name in ("certificates", "other", "primary", "sentinel", "certified"):
            (directory / name).mkdir()
        certificates = directory / "certificates"
        make_certificates(certificates)
        make_certificates(directory / "other")
        primary = TlsPrimary(directory / "primary", certificates)
        sentinel = LockedSentinel(directory / "sentinel", primary, certificates, tls=True)
        certified = CertifiedSentinel(directory / "certified", primary, certificates, tls=True)
        for process in (primary, sentinel, certified):
            stack.callback(process.kill)
            process.start()
        yield Setup(certificates, directory / "other" / "ca.crt", sentinel, certified)


@pytest.fixture
def redis_url(setup: Setup) -> str:
    return f"rediss://any/0?ssl_ca_certs={setup.certificates}/ca.crt"  # the host is ignored


def bad_setups(setup: Setup) -> dict[str, tuple[str, dict[str, Any], str]]:
    """Return each wrong set-up as LOCATION, OPTIONS['sentinel'] and what the error must say."""
    good_ca = f"ssl_ca_certs={setup.certificates}/ca.crt"

    def sentinel(
        host: str = "127.0.0.1", port: int = setup.sentinel.port, **extra: object
    ) -> dict[str, Any]:
        return {"service_name": SERVICE, "sentinels": [[host, port]], **extra}

    certified = setup.certified.port
    return {
        "other-ca": (
            f"rediss://any/0?ssl_ca_certs={setup.other_ca_file}",
            sentinel(password=PASSWORD),
            "presented a TLS certificate this client does not trust (certificate verify "
            f"failed: self-signed certificate in certificate chain): {SET_CA})",
        ),
        "ssl-true-under-redis-without-ca": (
            "redis://any/0",
            sentinel(password=PASSWORD, ssl=True),
            "presented a TLS certificate this client does not trust (certificate verify "
            f"failed: self-signed certificate in certificate chain): {SET_CA})",
        ),
        "missing-ca-file": (
            "rediss://any/0?ssl_ca_certs=/nonexistent/ca.crt",
            sentinel(password=PASSWORD),
            f"{CHECK_PATHS})",
        ),
        "other-host-name": (
            f"rediss://any/0?{good_ca}",
            sentinel("localhost", password=PASSWORD),
            "presented a TLS certificate this client does not trust (certificate verify "
            f"failed: Hostname mismatch, certificate is not valid for 'localhost'.): {SET_CA})",
        ),
        "no-client-certificate": (
            f"rediss://any/0?{good_ca}",
            sentinel(port=certified, password=PASSWORD),
            f"{SET_CLIENT_CERTIFICATE})",
        ),
        "no-client-certificate-nor-sentinel-password": (
            f"rediss://any/0?{good_ca}",
            sentinel(port=certified),
            f"{SET_CLIENT_CERTIFICATE})",
        ),
    }


SETUPS = [
    "other-ca",
    "ssl-true-under-redis-without-ca",
    "missing-ca-file",
    "other-host-name",
    "no-client-certificate",
    "no-client-certificate-nor-sentinel-password",
]


def backend_of(location: str, key_prefix: str, sentinel: dict[str, Any]) -> ThreadmillTaskBackend:
    with override_settings(TASKS=tasks_setting(location, key_prefix, sentinel=sentinel)):
        found = task_backends["default"]
    assert isinstance(found, ThreadmillTaskBackend)
    return found


@pytest.mark.parametrize("name", SETUPS)
def test_enqueue_and_the_check_refuse_it_naming_the_fix(
    setup: Setup, key_prefix: str, name: str
) -> None:
    location, sentinel, fix = bad_setups(setup)[name]
    backend = backend_of(location, key_prefix, sentinel)
    host, port = sentinel["sentinels"][0]
    for _ in range(REPEATS):
        with pytest.raises(BrokerRefused) as caught:
            backend.enqueue(echo, ["x"], {})
        assert f"(No master found for 'mymaster': {host}:{port} {fix}." in str(caught.value)
        assert str(caught.value).endswith(" Fix the TLS set-up; nothing was written.")
        assert "Wait if a failover" not in str(caught.value)
    assert [message.id for message in check_redis(backend)] == [REFUSED]


@pytest.mark.parametrize("name", ["missing-ca-file", "no-client-certificate"])
def test_the_worker_exits_4_and_health_fails_the_liveness_probe(
    setup: Setup, key_prefix: str, name: str
) -> None:
    location, sentinel, fix = bad_setups(setup)[name]
    options = {"sentinel": sentinel}
    refused_by_the_commands(location, key_prefix, options, fix)
