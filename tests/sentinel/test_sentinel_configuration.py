"""Bad OPTIONS['sentinel'] settings and sentinels in a bad state each name the problem and fix.

A setup of its own per test: one primary, and one sentinel that needs AUTH (requirepass, and
ACL users) and is slow to call the primary down, so that a test decides when it is.
"""

import asyncio
import socket
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
from django_threadmill.checks import REFUSED, UNREACHABLE, check_redis
from django_threadmill.compat import task_backends
from django_threadmill.exceptions import BrokerRefused, BrokerUnavailable, MaybeApplied
from testproject.example.tasks import echo
from tests.conftest import tasks_setting
from tests.servers.redis_cluster import wait_for
from tests.servers.redis_sentinel import DOWN_AFTER_MS, SERVICE, SentinelProcess
from tests.servers.redis_server import RedisProcess
from tests.support import close_pipelines, worker

from .conftest import LOCATION

PASSWORD = "sentinel-secret"  # the sentinel's requirepass
PRIMARY_PASSWORD = "primary-secret"  # the primary's, which the sentinel needs to watch it
ACL_USER, ACL_PASSWORD = "watcher", "watcher-secret"
LIMITED_USER, LIMITED_PASSWORD = "pinger", "pinger-secret"  # may PING, not SENTINEL
SLOW_DOWN_MS = 600_000  # the sentinel never calls the primary down unless a test says so

type BackendWith = Callable[..., ThreadmillTaskBackend]


class LockedPrimary(RedisProcess):
    """A primary that needs PRIMARY_PASSWORD."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory, "--requirepass", PRIMARY_PASSWORD)

    @property
    def url(self) -> str:
        return f"redis://:{PRIMARY_PASSWORD}@127.0.0.1:{self.port}/0"


class LockedSentinel(SentinelProcess):
    """A sentinel that needs AUTH and takes SLOW_DOWN_MS to call its primary down."""

    def __init__(self, directory: Path, primary_port: int) -> None:
        super().__init__(directory, primary_port)
        config = self.config.read_text().replace(
            f"down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
            f"down-after-milliseconds {SERVICE} {SLOW_DOWN_MS}",
        )
        self.config.write_text(
            f"{config}sentinel auth-pass {SERVICE} {PRIMARY_PASSWORD}\n"
            f"requirepass {PASSWORD}\n"
            f"user {ACL_USER} on >{ACL_PASSWORD} allcommands\n"
            f"user {LIMITED_USER} on >{LIMITED_PASSWORD} -@all +ping +auth +hello\n"
        )

    @property
    def url(self) -> str:
        return f"redis://:{PASSWORD}@127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, password=PASSWORD, decode_responses=True)


@dataclass
class Setup:
    primary: LockedPrimary
    sentinel: LockedSentinel

    def options(self, **auth: str | None) -> dict[str, Any]:
        """Return OPTIONS['sentinel'] for this setup, with the sentinel credentials ``auth``."""
        return {"service_name": SERVICE, "sentinels": [("127.0.0.1", self.sentinel.port)], **auth}


@pytest.fixture
def setup() -> Iterator[Setup]:
    with ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="tm-sentinel-")))
        (directory / "primary").mkdir()
        (directory / "sentinel").mkdir()
        primary = LockedPrimary(directory / "primary")
        sentinel = LockedSentinel(directory / "sentinel", primary.port)
        for process in (primary, sentinel):
            stack.callback(process.kill)
            process.start()
        yield Setup(primary, sentinel)


@pytest.fixture
def redis_url() -> str:
    return LOCATION  # the package's module-wide Sentinel setup is not started here


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {}


@pytest.fixture
def backend_with(key_prefix: str) -> Iterator[BackendWith]:
    """Return a function that gives the backend of OPTIONS['sentinel'] ``sentinel``."""
    with ExitStack() as stack:

        def make(
            sentinel: dict[str, Any],
            location: str = f"redis://:{PRIMARY_PASSWORD}@any/0",
            **options: object,
        ) -> ThreadmillTaskBackend:
            tasks = tasks_setting(location, key_prefix, sentinel=sentinel, **options)
            stack.enter_context(override_settings(TASKS=tasks))
            found = task_backends["default"]
            assert isinstance(found, ThreadmillTaskBackend)
            return found

        yield make
    close_pipelines(key_prefix)


def refused(backend: ThreadmillTaskBackend, match: str) -> str:
    """Assert enqueue is refused with ``match`` and the check says so (E004); return why."""
    with pytest.raises(BrokerRefused, match=match) as caught:
        backend.enqueue(echo, ["x"], {})
    assert [message.id for message in check_redis(backend)] == [REFUSED]
    return str(caught.value)


def test_the_right_credentials_work(setup: Setup, backend_with: BackendWith) -> None:
    for auth in ({"password": PASSWORD}, {"username": ACL_USER, "password": ACL_PASSWORD}):
        backend = backend_with(setup.options(**auth))
        assert backend.enqueue(echo, ["x"], {}).id


def test_a_service_name_no_sentinel_monitors_is_refused(
    setup: Setup, backend_with: BackendWith
) -> None:
    backend = backend_with({**setup.options(password=PASSWORD), "service_name": "mymastr"})
    refused(
        backend,
        rf"\(No master found for 'mymastr': 127\.0\.0\.1:{setup.sentinel.port} monitors no "
        r"'mymastr' \(it monitors 'mymaster'\): set OPTIONS\['sentinel'\]\['service_name'\] "
        r"to the name of its 'sentinel monitor' line\)\. Fix OPTIONS\['sentinel'\]; nothing "
        r"was written\.$",
    )


def test_aenqueue_names_the_setting_as_enqueue_does(
    setup: Setup, backend_with: BackendWith
) -> None:
    """The sentinels are asked why with a sync client, up to a second each: ``aenqueue`` asks
    them in a worker thread, so its event loop (an ASGI view) goes on meanwhile
    (tests/enqueue/test_async_calls_hold_no_event_loop.py)."""
    backend = backend_with({**setup.options(password=PASSWORD), "service_name": "mymastr"})

    with pytest.raises(BrokerRefused, match=r"monitors no 'mymastr' \(it monitors 'mymaster'\)"):
        asyncio.run(backend.aenqueue(echo, ["x"], {}))


def test_a_sentinel_that_needs_a_password_names_the_option(
    setup: Setup, backend_with: BackendWith
) -> None:
    refused(
        backend_with(setup.options()),
        r"needs credentials \(.*\): set OPTIONS\['sentinel'\]\['password'\] \(and 'username' "
        r"for an ACL user\) to the sentinels' own, from sentinel.conf\)",
    )


@pytest.mark.parametrize(
    "auth",
    [
        {"password": "wrong"},
        {"username": ACL_USER, "password": "wrong"},
        {"password": PRIMARY_PASSWORD},  # the primary's password where the sentinel's goes
    ],
    ids=["wrong-password", "acl-user-wrong-password", "primary-password"],
)
def test_credentials_the_sentinel_refuses_are_named_never_shown(
    setup: Setup, backend_with: BackendWith, auth: dict[str, str]
) -> None:
    why = refused(
        backend_with(setup.options(**auth)),
        r"refused the credentials of OPTIONS\['sentinel'\] \(.*\): set its 'username' and "
        r"'password' to the sentinels' own, from sentinel.conf \(or drop them if the sentinels "
        r"need none\); the primary's go in LOCATION\)",
    )
    assert auth["password"] not in why
    assert PRIMARY_PASSWORD not in why


def test_an_acl_user_without_the_sentinel_command_is_told_to_grant_it(
    setup: Setup, backend_with: BackendWith
) -> None:
    refused(
        backend_with(setup.options(username=LIMITED_USER, password=LIMITED_PASSWORD)),
        r"refused SENTINEL MASTERS to OPTIONS\['sentinel'\]\['username'\] \(.*\): grant that "
        r"ACL user '\+sentinel' in sentinel.conf\)",
    )


def test_a_redis_server_listed_as_a_sentinel_is_named(
    setup: Setup, backend_with: BackendWith
) -> None:
    options = {**setup.options(password=PRIMARY_PASSWORD)}
    options["sentinels"] = [("127.0.0.1", setup.primary.port)]
    refused(
        backend_with(options),
        rf"127\.0\.0\.1:{setup.primary.port} is a Redis server, not a sentinel \(.*\): list the "
        r"sentinels' addresses \(port 26379 by default\) in OPTIONS\['sentinel'\]\['sentinels'\]",
    )


def test_unreachable_sentinels_are_named_without_redis_py_reprs(
    setup: Setup, backend_with: BackendWith
) -> None:
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    options = {**setup.options(password=PASSWORD), "sentinels": [("127.0.0.1", port)]}
    backend = backend_with(options)
    with pytest.raises(BrokerUnavailable) as caught:
        backend.enqueue(echo, ["x"], {})
    assert not isinstance(caught.value, BrokerRefused)  # they may come back
    assert f"127.0.0.1:{port} is unreachable (" in str(caught.value)
    assert "redis.client.Redis" not in str(caught.value)
    assert [message.id for message in check_redis(backend)] == [UNREACHABLE]


def test_a_primary_the_sentinel_reports_down_is_named_with_its_flags(
    setup: Setup, backend_with: BackendWith
) -> None:
    backend = backend_with(setup.options(password=PASSWORD))
    client = setup.sentinel.client()
    try:
        client.sentinel_set(SERVICE, "down-after-milliseconds", 100)
        setup.primary.kill()
        # Not client.sentinel_master, which redis-py 6 fails on a plain Redis client (see
        # LocalSentinel.current_primary); its reply parser is applied here all the same.
        wait_for(
            lambda: "s_down" in client.execute_command("SENTINEL MASTER", SERVICE)["flags"],
            "the primary down",
        )
    finally:
        client.close()
    with pytest.raises(
        BrokerUnavailable,
        match=rf"127\.0\.0\.1:{setup.sentinel.port} reports the primary 127\.0\.0\.1:"
        rf"{setup.primary.port} as [a-z_,]*s_down.*\)\. Wait if a failover is under way",
    ) as caught:
        backend.enqueue(echo, ["x"], {})
    assert not isinstance(caught.value, BrokerRefused)


def test_a_primary_demoted_behind_the_sentinels_back_wrote_nothing_and_is_reported(
    setup: Setup, backend_with: BackendWith, tmp_path: Path
) -> None:
    """READONLY from the server the sentinels name is a refused write, not a dropped one."""
    backend = backend_with(setup.options(password=PASSWORD))
    with ExitStack() as stack:
        other = RedisProcess(tmp_path)
        stack.callback(other.kill)
        other.start()
        primary = redis.Redis.from_url(setup.primary.url)
        stack.callback(primary.close)
        primary.replicaof("127.0.0.1", other.port)
        with pytest.raises(
            BrokerUnavailable,
            match=r"The primary the sentinels named for Redis at redis://:\*\*\*@any/0 is a "
            r"read-only replica \(The previous master is now a slave\), which refused the call\.",
        ) as caught:
            backend.enqueue(echo, ["x"], {})
        assert not isinstance(caught.value, MaybeApplied)
        [message] = [m for m in check_redis(backend) if m.id == "threadmill.E013"]
        assert message.hint == (
            "The sentinels name this replica as the primary: wait for the failover to finish; "
            "if it lasts, it was made a replica behind their back: make it a primary again "
            "(REPLICAOF NO ONE) or run SENTINEL FAILOVER mymaster."
        )


@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
def test_a_hung_sentinel_is_asked_once_before_the_next(
    setup: Setup, backend_with: BackendWith, asynchronous: bool
) -> None:
    """A sentinel that accepts connections and never answers (a frozen host) costs one socket
    timeout per lookup, not one per redis-py retry."""
    with socket.socket() as hung:
        hung.bind(("127.0.0.1", 0))
        hung.listen(64)  # the kernel accepts for it; nothing ever reads or answers
        options = setup.options(password=PASSWORD)
        options["sentinels"] = [hung.getsockname(), *options["sentinels"]]
        backend = backend_with(options, socket_timeout=0.5)
        if asynchronous:
            assert asyncio.run(backend.aenqueue(echo, ["x"], {})).id
        else:
            assert backend.enqueue(echo, ["x"], {}).id
        hung.setblocking(False)
        assert accepted(hung) == 1


def accepted(listener: socket.socket) -> int:
    """Return how many connections wait on ``listener``, closing them."""
    count = 0
    while True:
        try:
            connection, _ = listener.accept()
        except BlockingIOError:
            return count
        connection.close()
        count += 1


def test_a_worker_stops_at_start_on_a_service_name_no_sentinel_monitors(
    setup: Setup, key_prefix: str
) -> None:
    """Before, it waited for a primary that no wait brings, logging "Wait if a failover…"."""
    options = {"sentinel": {**setup.options(password=PASSWORD), "service_name": "mymastr"}}
    command = worker(f"redis://:{PRIMARY_PASSWORD}@any/0", key_prefix, options=options)
    try:
        assert command.wait(60) != 0, command.log
        log = command.log
    finally:
        command.close()
    assert "threadmill.E004" in log
    assert "monitors no 'mymastr' (it monitors 'mymaster')" in log
    assert PASSWORD not in log
