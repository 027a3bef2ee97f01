"""threadmill/metrics reads Redis at every scrape: never served from a cache, answered to HEAD
as to GET, and a backend whose Redis is down leaves the other backends' metrics exported."""

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from django.conf import settings
from django.test import Client, override_settings
from prometheus_client.parser import text_string_to_metric_families

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker.inspect import Inspector
from django_threadmill.exceptions import BrokerUnavailable
from django_threadmill.observability import prometheus
from testproject.example.tasks import add
from tests.conftest import tasks_setting

URL = "/threadmill/metrics"
TOKEN = "s3cret-token-for-the-scraper"
BEARER = {"Authorization": f"Bearer {TOKEN}"}
DOWN = "redis://127.0.0.1:1/0"  # nothing listens on port 1
SITE_CACHE = override_settings(
    MIDDLEWARE=[
        "django.middleware.cache.UpdateCacheMiddleware",
        *settings.MIDDLEWARE,
        "django.middleware.cache.FetchFromCacheMiddleware",
    ],
    CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
)


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"metrics_token": TOKEN}


def scraped(headers: dict[str, str] = BEARER) -> dict[tuple[str, frozenset], float]:
    response = Client().get(URL, headers=headers)
    assert response.status_code == 200, response.content
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def ready(found: dict[tuple[str, frozenset], float], backend: str = "default") -> float:
    labels = {"backend": backend, "queue": "default", "state": "ready"}
    return found[("threadmill_queue_tasks", frozenset(labels.items()))]


def up(found: dict[tuple[str, frozenset], float], backend: str) -> float:
    return found[("threadmill_backend_up", frozenset({"backend": backend}.items()))]


def with_backend(name: str, location: str, prefix: str, **options: object) -> dict[str, object]:
    """Return TASKS with the test's default backend and another one, ``name``."""
    both = tasks_setting(settings.TASKS["default"]["LOCATION"], prefix, **options)
    other = tasks_setting(location, f"{prefix}-{name}", **options)
    return {**both, name: other["default"]}


@SITE_CACHE
def test_a_site_wide_cache_serves_no_scrape_twice(backend: ThreadmillTaskBackend) -> None:
    assert ready(scraped()) == 0
    add.enqueue(1, 2)
    assert ready(scraped()) == 1


def test_head_is_answered_as_get(backend: ThreadmillTaskBackend) -> None:
    got, head = Client().get(URL, headers=BEARER), Client().head(URL, headers=BEARER)
    assert (head.status_code, head["Content-Type"]) == (200, got["Content-Type"])
    assert Client().head(URL).status_code == 401


def test_a_redis_down_leaves_the_other_backends_exported(
    backend: ThreadmillTaskBackend, key_prefix: str, caplog: pytest.LogCaptureFixture
) -> None:
    add.enqueue(1, 2)
    with override_settings(TASKS=with_backend("bulk", DOWN, key_prefix, metrics_token=TOKEN)):
        found = scraped()
    assert ready(found) == 1
    assert (up(found, "default"), up(found, "bulk")) == (1, 0)
    assert not [labels for _, labels in found if ("backend", "bulk") in labels and len(labels) > 1]
    [warning] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert f"backend 'bulk' left out of the scrape: Redis at {DOWN} is unreachable" in (
        warning.getMessage()
    )


def test_a_backend_failing_midway_adds_none_of_its_samples(
    backend: ThreadmillTaskBackend, key_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = settings.TASKS["default"]["LOCATION"]
    read_counters = prometheus.lifetime

    def failing_for_bulk(inspector: Inspector, queues: Sequence[str], now_ms: int) -> Any:
        if inspector.broker.settings.alias == "bulk":  # its queue counts read, then Redis went
            raise BrokerUnavailable("Redis stopped answering as the counters were read")
        return read_counters(inspector, queues, now_ms)

    monkeypatch.setattr(prometheus, "lifetime", failing_for_bulk)
    with override_settings(TASKS=with_backend("bulk", location, key_prefix, metrics_token=TOKEN)):
        found = scraped()
    assert (up(found, "default"), up(found, "bulk")) == (1, 0)
    assert not [labels for _, labels in found if ("backend", "bulk") in labels and len(labels) > 1]


def test_every_redis_down_fails_the_scrape_naming_each(key_prefix: str) -> None:
    both = with_backend("bulk", DOWN, key_prefix, metrics_token=TOKEN)
    both["default"] = {**both["default"], "LOCATION": DOWN}
    with override_settings(TASKS=both):
        response = Client().get(URL, headers=BEARER)
    assert response.status_code == 503
    assert response.content.decode().count(f"Redis at {DOWN} is unreachable") == 2
