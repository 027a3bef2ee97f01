"""threadmill_health counts every live process of its host, whatever the fleet and the scores.

Before, the probe read only the newest 1,000 sightings of each queue (MAX_SIGHTINGS): on a fleet
of more live worker processes, a host whose processes had renewed a little earlier than 1,000
others read "live=0" and exited 1, so Kubernetes took a healthy pod out of service or restarted
it. A sighting scored inf or -inf by hand ended the probe in an OverflowError traceback (exit 1,
"too few").
"""

import socket
import subprocess
import sys

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect.sightings import MAX_SIGHTINGS
from django_threadmill.management.health import HealthCode
from tests.support import ROOT, command_env

HOST = socket.gethostname()


def probe(redis_url: str, key_prefix: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py threadmill_health`` once (lease_ttl 60 s); return its exit and output."""
    return subprocess.run(
        [sys.executable, "manage.py", "threadmill_health", *args],
        cwd=ROOT,
        env=command_env(redis_url, key_prefix),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def redis_now_ms(client: redis.Redis) -> int:
    seconds, micros = client.time()
    return seconds * 1000 + micros // 1000


def test_a_hosts_processes_count_behind_a_thousand_newer_ones(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, redis_url: str, key_prefix: str
) -> None:
    workers = backend.broker.queue_keys("default").workers
    now_ms = redis_now_ms(redis_client)
    redis_client.zadd(workers, {f"{HOST}:7:00aa": now_ms - 1_000, f"{HOST}:8:00bb": now_ms - 2_000})
    redis_client.zadd(workers, {f"other-{n}:1:00cc": now_ms for n in range(MAX_SIGHTINGS)})
    healthy = probe(redis_url, key_prefix, "--queue", "default", "--min-processes", "2")
    assert (healthy.returncode, healthy.stderr) == (HealthCode.HEALTHY, "")
    assert healthy.stdout == (
        f"Healthy host={HOST} live=2 min_processes=2 queues=default lease_ttl_s=60\n"
    )
    elsewhere = probe(redis_url, key_prefix, "--queue", "default", "--host", "gone.example")
    assert elsewhere.returncode == HealthCode.TOO_FEW
    assert f"live_elsewhere={MAX_SIGHTINGS + 2}:" in elsewhere.stderr


@pytest.mark.parametrize("score", [float("inf"), float("-inf")])
def test_a_sighting_scored_inf_by_hand_is_no_renewal(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    score: float,
) -> None:
    workers = backend.broker.queue_keys("default").workers
    redis_client.zadd(workers, {f"{HOST}:9:00dd": score})
    never = probe(redis_url, key_prefix, "--queue", "default")
    assert never.returncode == HealthCode.TOO_FEW
    assert "Traceback" not in never.stderr
    assert f"host={HOST} live=0 min_processes=1 queues=default" in never.stderr
    assert "last_seen=never live_elsewhere=0:" in never.stderr
    redis_client.zadd(workers, {f"{HOST}:7:00aa": redis_now_ms(redis_client)})
    healthy = probe(redis_url, key_prefix, "--queue", "default")
    assert (healthy.returncode, healthy.stderr) == (HealthCode.HEALTHY, "")
    assert f"host={HOST} live=1 " in healthy.stdout
