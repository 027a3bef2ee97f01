"""Sentinels that take only TLS are reached over TLS when LOCATION says rediss://, with its
ssl_* arguments and OPTIONS['sentinel']'s password; OPTIONS['sentinel']['ssl'] says otherwise,
and a transport the sentinels do not take is refused naming that setting.

Before, the connections to the sentinels were plain text whatever LOCATION said: sentinels on
TLS alone read as unreachable ("Wait if a failover is under way"), and plain-text ones were sent
their password in clear under a rediss:// LOCATION.
"""

import asyncio
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis
from django.test import override_settings

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import REFUSED, check_redis
from django_threadmill.compat import TaskResultStatus, task_backends
from django_threadmill.exceptions import BrokerRefused
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.security.tls import make_certificates
from tests.servers.redis_sentinel import SERVICE, SentinelProcess
from tests.servers.redis_server import RedisProcess, redis_server_binary
from tests.support import close_pipelines, run_to_completion, worker

PASSWORD = "sentinel-secret"  # every sentinel's requirepass

type BackendWith = Callable[..., ThreadmillTaskBackend]


def tls_files(directory: Path) -> tuple[str, ...]:
    """Return the redis-server arguments of the throwaway CA's certificate for 127.0.0.1."""
    return (
        *("--tls-cert-file", str(directory / "redis.crt")),
        *("--tls-key-file", str(directory / "redis.key")),
        *("--tls-ca-cert-file", str(directory / "ca.crt")),
        *("--tls-auth-clients", "no"),
    )


class TlsPrimary(RedisProcess):
    """A primary that takes only TLS, on its port."""

    def __init__(self, directory: Path, certificates: Path) -> None:
        super().__init__(directory)
        self.extra_args = ("--port", "0", "--tls-port", str(self.port), *tls_files(certificates))
        self.ca_file = certificates / "ca.crt"

    @property
    def url(self) -> str:
        return f"rediss://127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca_file}"


class LockedSentinel(SentinelProcess):
    """A sentinel of the TLS primary that needs PASSWORD, on TLS alone or plain text alone."""

    def __init__(self, directory: Path, primary: TlsPrimary, certificates: Path, *, tls: bool):
        super().__init__(directory, primary.port)
        listen = f"port 0\ntls-port {self.port}\n" if tls else ""
        self.tls = tls
        self.ca_file = primary.ca_file
        self.config.write_text(
            f"{self.config.read_text()}{listen}requirepass {PASSWORD}\ntls-replication yes\n"
        )
        self.certificates = certificates

    def arguments(self) -> list[str]:
        return [*super().arguments(), *tls_files(self.certificates)]

    @property
    def url(self) -> str:
        if self.tls:
            return f"rediss://:{PASSWORD}@127.0.0.1:{self.port}/0?ssl_ca_certs={self.ca_file}"
        return f"redis://:{PASSWORD}@127.0.0.1:{self.port}/0"


@dataclass
class Setup:
    primary: TlsPrimary
    tls_sentinel: LockedSentinel
    plain_sentinel: LockedSentinel

    def options(self, sentinel: LockedSentinel, **extra: object) -> dict[str, Any]:
        """Return OPTIONS['sentinel'] listing ``sentinel`` alone, with its password."""
        return {
            "service_name": SERVICE,
            "sentinels": [("127.0.0.1", sentinel.port)],
            "password": PASSWORD,
            **extra,
        }


def built_with_tls() -> bool:
    """Tell whether this redis-server knows TLS: one built without it has no tls-port (Redis)
    or no TLS connection type (Valkey)."""
    run = subprocess.run(
        [redis_server_binary(), "--port", "0", "--tls-port", "1", "--tls-cert-file", "/none"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    said = run.stdout + run.stderr
    return not any(no_tls in said for no_tls in ("Bad directive", "Failed finding TLS support"))


@pytest.fixture(scope="module")
def setup() -> Iterator[Setup]:
    if not built_with_tls():
        pytest.skip("this redis-server has no TLS support")
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tm-sentinel-")))
        for name in ("certificates", "primary", "tls", "plain"):
            (directory / name).mkdir()
        certificates = directory / "certificates"
        make_certificates(certificates)
        primary = TlsPrimary(directory / "primary", certificates)
        sentinels = [
            LockedSentinel(directory / name, primary, certificates, tls=name == "tls")
            for name in ("tls", "plain")
        ]
        for process in (primary, *sentinels):
            stack.callback(process.kill)
            process.start()
        yield Setup(primary, *sentinels)


@pytest.fixture
def redis_url(setup: Setup) -> str:
    return f"rediss://any/0?ssl_ca_certs={setup.primary.ca_file}"  # the host is ignored


@pytest.fixture
def backend_with(key_prefix: str, redis_url: str) -> Iterator[BackendWith]:
    """Return a function that gives the backend of OPTIONS['sentinel'] ``sentinel``."""
    with ExitStack() as stack:

        def make(sentinel: dict[str, Any]) -> ThreadmillTaskBackend:
            tasks = tasks_setting(redis_url, key_prefix, sentinel=sentinel)
            stack.enter_context(override_settings(TASKS=tasks))
            found = task_backends["default"]
            assert isinstance(found, ThreadmillTaskBackend)
            return found

        yield make
    close_pipelines(key_prefix)


def stored(setup: Setup, key_prefix: str) -> list[str]:
    """Return the keys of this test's prefix on the TLS primary."""
    client = redis.Redis.from_url(setup.primary.url, decode_responses=True)
    try:
        return list(client.scan_iter(f"{key_prefix}:*"))
    finally:
        client.close()


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_rediss_location_reaches_sentinels_on_tls_alone(
    setup: Setup, backend_with: BackendWith, key_prefix: str, asynchronous: bool
) -> None:
    backend = backend_with(setup.options(setup.tls_sentinel))
    if asynchronous:
        assert asyncio.run(backend.aenqueue(echo, ["x"], {})).id
    else:
        assert backend.enqueue(echo, ["x"], {}).id
    assert stored(setup, key_prefix)
    assert REFUSED not in [message.id for message in check_redis(backend)]


def test_a_worker_runs_tasks_through_sentinels_on_tls_alone(
    setup: Setup, backend_with: BackendWith, key_prefix: str, redis_url: str
) -> None:
    sentinel = setup.options(setup.tls_sentinel)
    result = backend_with(sentinel).enqueue(echo, ["over tls"], {})
    options = {"sentinel": {**sentinel, "sentinels": [list(sentinel["sentinels"][0])]}}
    run_to_completion(worker(redis_url, key_prefix, "--burst", options=options))
    result.refresh()
    assert result.status == TaskResultStatus.SUCCESSFUL
    assert result.return_value == "over tls"


def test_ssl_false_reaches_plain_text_sentinels_under_a_rediss_location(
    setup: Setup, backend_with: BackendWith
) -> None:
    backend = backend_with(setup.options(setup.plain_sentinel, ssl=False))
    assert backend.enqueue(echo, ["x"], {}).id


def test_plain_text_sentinels_under_a_rediss_location_name_the_setting(
    setup: Setup, backend_with: BackendWith
) -> None:
    backend = backend_with(setup.options(setup.plain_sentinel))
    with pytest.raises(BrokerRefused) as caught:
        backend.enqueue(echo, ["x"], {})
    assert (
        f"127.0.0.1:{setup.plain_sentinel.port} answered in plain text a TLS connection, which "
        "it did not take (" in str(caught.value)
    )
    assert (
        "set OPTIONS['sentinel']['ssl'] to False for sentinels without TLS (a rediss:// "
        "LOCATION reaches the sentinels over TLS too), or list their TLS ports)"
    ) in str(caught.value)
    assert PASSWORD not in str(caught.value)
    assert [message.id for message in check_redis(backend)] == [REFUSED]


def test_ssl_false_at_sentinels_on_tls_alone_names_the_setting(
    setup: Setup, backend_with: BackendWith
) -> None:
    backend = backend_with(setup.options(setup.tls_sentinel, ssl=False))
    with pytest.raises(BrokerRefused) as caught:
        backend.enqueue(echo, ["x"], {})
    assert (
        f"127.0.0.1:{setup.tls_sentinel.port} is a TLS port, which dropped a plain-text "
        "connection (" in str(caught.value)
    )
    assert "set OPTIONS['sentinel']['ssl'] to True" in str(caught.value)
    assert [message.id for message in check_redis(backend)] == [REFUSED]
