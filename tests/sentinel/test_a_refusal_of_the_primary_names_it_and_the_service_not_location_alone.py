"""A refusal of the primary the sentinels named (out of memory, here) names that primary and the
service, not LOCATION alone, whose host is never used under Sentinel.

Before, enqueue and aenqueue said "Redis at redis://sentinel-managed/0 is out of memory (...).
Raise maxmemory", naming no server of the two or more behind the sentinels: the operator was
left to find which one to raise it on. The errors of a primary that does not answer named it
already.
"""

import asyncio
import re
from collections.abc import Iterator

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_sentinel import SERVICE, LocalSentinel

from .conftest import LOCATION


@pytest.fixture
def full_primary(sentinel_setup: LocalSentinel) -> Iterator[int]:
    """The primary the sentinels name, out of memory for the test; yields its port."""
    port = sentinel_setup.current_primary().port
    client = redis.Redis(port=port)
    try:
        client.config_set("maxmemory", 1)
        yield port
    finally:
        client.config_set("maxmemory", 0)
        client.close()


def test_enqueue_and_aenqueue_name_the_primary_that_is_out_of_memory_and_the_service(
    backend: ThreadmillTaskBackend, full_primary: int
) -> None:
    named = (
        f"Redis at {LOCATION} (the primary the sentinels named for {SERVICE!r}, "
        f"127.0.0.1:{full_primary}) is out of memory"
    )
    with pytest.raises(BrokerUnavailable, match=f"^{re.escape(named)}"):
        echo.enqueue("on a full primary")
    with pytest.raises(BrokerUnavailable, match=f"^{re.escape(named)}"):
        asyncio.run(echo.aenqueue("on a full primary"))
