"""Worker tests run the real command; they get a helper that starts it and always stops it."""

from collections.abc import Callable, Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from tests.support import Command, worker

from .support import WatchedBroker


@pytest.fixture
def start_worker(redis_url: str, key_prefix: str) -> Iterator[Callable[..., Command]]:
    started: list[Command] = []

    def start(
        *args: str,
        lease_ttl_s: float = 60.0,
        extra_env: dict[str, str] | None = None,
        options: dict[str, object] | None = None,
    ) -> Command:
        command = worker(
            redis_url,
            key_prefix,
            *args,
            lease_ttl_s=lease_ttl_s,
            extra_env=extra_env,
            options=options,
        )
        started.append(command)
        return command

    yield start
    for command in started:
        command.close()


@pytest.fixture
def watched_broker(backend: ThreadmillTaskBackend) -> Iterator[WatchedBroker]:
    broker = WatchedBroker(backend.broker)
    yield broker
    broker.client.close()  # its own connections, not the backend's
