"""A TLS primary that requires a client certificate (tls-auth-clients yes) and was sent none,
or one it refuses (signed by a CA it does not trust, expired), is refused naming the setting
to fix: no wait fixes it, and nothing reached Redis.

Before, redis-py's first write most often met the connection the server had closed, its alert
unread: enqueue raised ``MaybeApplied`` "… is unreachable (Error 8 while writing to socket. EOF
occurred in violation of protocol …). Start Redis or fix TASKS LOCATION; the call may have been
applied …", a refused certificate read as unreachable even when its alert was read, the check
said E001, ``threadmill_health --redis-down-ok`` passed and the worker waited for good.
"""

import asyncio
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import REFUSED, check_redis
from django_threadmill.exceptions import BrokerRefused
from tests.security.tls import make_certificates, refused_by_the_commands
from tests.sentinel.test_sentinels_that_take_only_tls_are_reached_over_tls_as_location_says import (
    TlsPrimary,
    built_with_tls,
)

from . import tasks

SET_IN = "Set ssl_certfile and ssl_keyfile in LOCATION's query or OPTIONS['connection_options']"
TRUSTED = "to a certificate signed by a CA the server trusts (its tls-ca-cert-file) and its key"
REPEATS = 5  # the alert races redis-py's first write: each try must name it


class CertifiedPrimary(TlsPrimary):
    """A TLS primary that takes only clients with a certificate its CA signed; its ``url``
    gives one, ``bare_url`` none."""

    def arguments(self) -> list[str]:
        return [*super().arguments(), "--tls-auth-clients", "yes"]

    @property
    def bare_url(self) -> str:
        return super().url

    @property
    def url(self) -> str:
        files = self.ca_file.parent
        return f"{super().url}&ssl_certfile={files}/redis.crt&ssl_keyfile={files}/redis.key"


@dataclass
class Setup:
    primary: CertifiedPrimary
    certificates: Path
    other: Path  # a certificate and key of another CA, which the primary does not trust
    expired: Path  # a certificate for the primary's redis.key, its CA's, expired


def sign_expired(certificates: Path) -> Path:
    """Return a certificate for redis.key that the primary's own CA signed, expired a day ago."""
    subprocess.run(
        ["openssl", "x509", "-req", "-in", "redis.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
         "-days", "-1", "-out", "expired.crt"],
        cwd=certificates, check=True, capture_output=True,
    )  # fmt: skip
    return certificates / "expired.crt"


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    if not built_with_tls():
        pytest.skip("this redis-server has no TLS support")
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tm-client-")))
        for name in ("certificates", "other", "primary"):
            (directory / name).mkdir()
        certificates = directory / "certificates"
        make_certificates(certificates)
        make_certificates(directory / "other")
        primary = CertifiedPrimary(directory / "primary", certificates)
        stack.callback(primary.kill)
        primary.start()
        yield Setup(primary, certificates, directory / "other", sign_expired(certificates))


def bad_setups(setup: Setup) -> dict[str, tuple[str, dict[str, Any], str]]:
    """Return each wrong client certificate as LOCATION, OPTIONS['connection_options'] and the
    error it must raise after "Redis at <LOCATION> "."""
    bare = setup.primary.bare_url
    key = setup.certificates / "redis.key"
    return {
        "none": (
            bare,
            {},
            "takes no TLS client without a certificate, and this client sent none "
            f"(TLSV13_ALERT_CERTIFICATE_REQUIRED). {SET_IN} {TRUSTED}; nothing was written.",
        ),
        "of-another-ca": (
            bare,
            {
                "ssl_certfile": str(setup.other / "redis.crt"),
                "ssl_keyfile": str(setup.other / "redis.key"),
            },
            "refused the TLS client certificate of ssl_certfile as signed by a CA it does not "
            f"trust (TLSV1_ALERT_UNKNOWN_CA). {SET_IN} {TRUSTED}; nothing was written.",
        ),
        "expired": (
            f"{bare}&ssl_certfile={setup.expired}&ssl_keyfile={key}",
            {},
            "refused the TLS client certificate of ssl_certfile as expired "
            f"(SSLV3_ALERT_CERTIFICATE_EXPIRED). {SET_IN} to a certificate in date (renew it) "
            "and its key; nothing was written.",
        ),
    }


def backend_of(
    location: str, key_prefix: str, connection_options: dict[str, Any], **options: object
) -> ThreadmillTaskBackend:
    return ThreadmillTaskBackend(
        "default",
        {
            "LOCATION": location,
            "OPTIONS": {
                "key_prefix": key_prefix,
                "connection_options": connection_options,
                **options,
            },
        },
    )


@pytest.mark.parametrize("name", ["none", "of-another-ca", "expired"])
def test_enqueue_and_the_check_refuse_it_naming_the_fix(
    setup: Setup, key_prefix: str, name: str
) -> None:
    location, connection_options, problem = bad_setups(setup)[name]
    backend = backend_of(location, key_prefix, connection_options)
    for _ in range(REPEATS):
        with pytest.raises(BrokerRefused) as caught:
            backend.enqueue(tasks.touch, ["x"], {})
        assert str(caught.value) == f"Redis at {location} {problem}"
        with pytest.raises(BrokerRefused) as caught:
            asyncio.run(backend.aenqueue(tasks.touch, ["x"], {}))
        assert str(caught.value) == f"Redis at {location} {problem}"
    assert [message.id for message in check_redis(backend)] == [REFUSED]


@pytest.mark.parametrize("name", ["none", "of-another-ca"])
def test_a_cluster_client_refuses_it_naming_the_fix(
    setup: Setup, key_prefix: str, name: str
) -> None:
    """redis-py's cluster client reads the slot map with the same first write; no handshake
    succeeds, so the primary stands in for a cluster node."""
    location, connection_options, problem = bad_setups(setup)[name]
    backend = backend_of(location, key_prefix, connection_options, cluster=True)
    for _ in range(REPEATS):
        with pytest.raises(BrokerRefused) as caught:
            backend.enqueue(tasks.touch, ["x"], {})
        assert str(caught.value) == f"Redis at {location} {problem}"


@pytest.mark.parametrize("name", ["none", "of-another-ca"])
def test_the_worker_exits_4_and_health_fails_the_liveness_probe(
    setup: Setup, key_prefix: str, name: str
) -> None:
    location, connection_options, problem = bad_setups(setup)[name]
    options = {"connection_options": connection_options}
    fix = problem.removesuffix("; nothing was written.")
    worker, check = refused_by_the_commands(location, key_prefix, options, fix)
    assert "retrying" not in worker.stderr
    assert fix in check.stderr
