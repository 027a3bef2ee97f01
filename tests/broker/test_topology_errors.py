"""A Redis Cluster or Sentinel that cannot be reached is BrokerUnavailable, naming the fix."""

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import check_redis
from django_threadmill.exceptions import BrokerUnavailable
from testproject.example.tasks import echo
from tests.servers.redis_server import free_port


def backend_with(**options: object) -> ThreadmillTaskBackend:
    location = f"redis://127.0.0.1:{free_port()}/0"
    return ThreadmillTaskBackend(
        "default", {"LOCATION": location, "QUEUES": ["default"], "OPTIONS": options}
    )


def test_unreachable_cluster_is_unavailable_and_a_check_error() -> None:
    backend = backend_with(cluster=True)
    with pytest.raises(
        BrokerUnavailable,
        match=r"The Redis Cluster at redis://127\.0\.0\.1:\d+/0 cannot serve this call now "
        r"\(.*\)\. Wait for the failover or the resharding to finish .* or fix LOCATION; "
        r"nothing was written\.",
    ):
        backend.enqueue(echo, [1], {})
    assert [message.id for message in check_redis(backend)] == ["threadmill.E001"]


def test_unreachable_sentinels_are_unavailable() -> None:
    backend = backend_with(
        sentinel={"service_name": "mymaster", "sentinels": [("127.0.0.1", free_port())]}
    )
    with pytest.raises(
        BrokerUnavailable,
        match=r"No sentinel named a primary for Redis at .* \(No master found for 'mymaster'.*"
        r"\)\. Wait if a failover is under way; else start the sentinels and the primary, or fix "
        r"OPTIONS\['sentinel'\]",
    ):
        backend.enqueue(echo, [1], {})
