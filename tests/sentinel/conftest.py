"""A real Sentinel setup (1 primary, 1 replica, 3 sentinels) per module, and a backend on it."""

import json
from collections.abc import Iterator

import pytest
import redis

from tests.servers.redis_sentinel import SERVICE, LocalSentinel, local_sentinel

LOCATION = "redis://sentinel-managed/0"  # the host is ignored: the sentinels name the primary


@pytest.fixture(scope="module")
def sentinel_setup() -> Iterator[LocalSentinel]:
    with local_sentinel() as setup:
        yield setup


@pytest.fixture
def redis_url(sentinel_setup: LocalSentinel) -> str:
    return LOCATION


@pytest.fixture
def tasks_options(sentinel_setup: LocalSentinel) -> dict[str, object]:
    sentinels = [list(address) for address in sentinel_setup.addresses]
    return {
        "sentinel": {"service_name": SERVICE, "sentinels": sentinels},
        "durability": "replicated",
    }


def command_env(tasks_options: dict[str, object]) -> dict[str, str]:
    return {"THREADMILL_OPTIONS": json.dumps(tasks_options)}


@pytest.fixture
def redis_client(sentinel_setup: LocalSentinel, key_prefix: str) -> Iterator[redis.Redis]:
    """A client on the current primary; afterwards it deletes the test's keys."""
    client = redis.Redis(port=sentinel_setup.current_primary().port, decode_responses=True)
    yield client
    keys = list(client.scan_iter(f"{key_prefix}:*", count=1000))
    if keys:
        client.delete(*keys)
    client.close()
