"""A reaper's pass trims an idle queue's done index again while a call leaves expired ids, up
to a bound of calls per pass, each of at most 1,000 ids.

One trim call per pass, every ``lease_ttl``, took 17 hours to clear a million expired ids an
idle queue kept, its SUCCESSFUL and FAILED totals counting them all the while
(docs/observability.md, Metrics and the done index).
"""

from collections.abc import Collection, Sequence

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.worker import reaper
from django_threadmill.worker.reaper import reap_once

from .conftest import redis_now_ms

EXPIRED = 2500  # two and a half of metrics.lua's 1,000-id trims


def indexed_after_each_trim(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> list[int]:
    """Fill default's done index with EXPIRED ids finished long ago and one finished now;
    return the list the index's size is appended to after each send that trims default."""
    done = backend.broker.queue_keys("default").done
    redis_client.zadd(done, {f"expired-{n:05d}@default": n + 1 for n in range(EXPIRED)})
    redis_client.zadd(done, {"finished-now@default": redis_now_ms(redis_client)})
    sizes: list[int] = []
    send = backend.broker.send_metrics_each

    def sent(
        *, trimming: Sequence[str] = (), leaving_out: Collection[str] = ()
    ) -> tuple[list[str], dict[str, BrokerUnavailable]]:
        answer = send(trimming=trimming, leaving_out=leaving_out)
        if "default" in trimming:
            sizes.append(redis_client.zcard(done))
        return answer

    monkeypatch.setattr(backend.broker, "send_metrics_each", sent)
    return sizes


def test_one_pass_empties_an_idle_queues_index_and_stops_when_none_are_left(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    sizes = indexed_after_each_trim(backend, redis_client, monkeypatch)
    reap_once(backend)
    assert sizes == [1501, 501, 1]  # 1,000 a call; the id finished now stays

    reap_once(backend)
    assert sizes[3:] == [1]  # nothing expired: one call, not a second


def test_a_pass_stops_at_the_bound_and_the_next_takes_the_rest(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reaper, "TRIM_CALLS_PER_PASS", 2)
    sizes = indexed_after_each_trim(backend, redis_client, monkeypatch)
    reap_once(backend)
    assert sizes == [1501, 501]
    reap_once(backend)
    assert sizes[2:] == [1]
