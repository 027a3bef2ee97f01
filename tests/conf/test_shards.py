"""OPTIONS["queue_shards"]: a whole number of shards per queue, with a clear error otherwise."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.checks import _shard_messages
from django_threadmill.conf.settings import read_settings


def shards(value: object, **options: object) -> dict[str, int]:
    return read_settings("default", {"OPTIONS": {"queue_shards": value, **options}}).queue_shards


def test_shards_are_read_per_queue_and_default_to_one() -> None:
    settings = read_settings("default", {"OPTIONS": {"queue_shards": {"hot": 6, "warm": 1}}})
    assert (settings.shards_of("hot"), settings.shards_of("warm"), settings.shards_of("x")) == (
        6,
        1,
        1,
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], r"OPTIONS\['queue_shards'\] is \[\]\. Use a dict of queue name to a number of shards"),
        ({"hot": 0}, r"OPTIONS\['queue_shards'\]\['hot'\] is 0\. Use a whole number from 1"),
        ({"hot": "4"}, r"\['hot'\] is '4'\. Use a whole number from 1 \(unsharded\) to 256"),
        ({"hot": True}, r"\['hot'\] is True\."),
        ({"hot": 2.0}, r"\['hot'\] is 2\.0\."),
        ({"hot": 257}, r"\['hot'\] is 257\."),
    ],
)
def test_bad_shard_counts_say_how_to_fix_them(value: object, message: str) -> None:
    with pytest.raises(ImproperlyConfigured, match=message):
        shards(value)


def test_a_sharded_queue_cannot_also_be_limited() -> None:
    with pytest.raises(
        ImproperlyConfigured,
        match=r"names queue 'hot' in both 'queue_shards' and 'queue_limits'\. A concurrency or "
        r"rate limit holds within one shard only",
    ):
        shards({"hot": 4}, queue_limits={"hot": {"concurrency": 2}})
    assert shards({"hot": 1}, queue_limits={"hot": {"concurrency": 2}}) == {"hot": 1}


def test_a_sharded_queue_name_must_be_valid() -> None:
    with pytest.raises(ImproperlyConfigured, match=r"Queue name 'bad#name' is not valid"):
        ThreadmillTaskBackend("default", {"OPTIONS": {"queue_shards": {"bad#name": 2}}})


def test_checks_warn_about_shards_that_cannot_help(backend: ThreadmillTaskBackend) -> None:
    params = {
        "LOCATION": backend.settings.location,
        "QUEUES": ["default"],
        "OPTIONS": {"key_prefix": backend.settings.key_prefix, "queue_shards": {"hot": 4}},
    }
    messages = _shard_messages(ThreadmillTaskBackend("default", params))
    assert [m.id for m in messages] == ["threadmill.W004", "threadmill.W005"]
    assert messages[0].msg == (
        "TASKS['default']: OPTIONS['queue_shards'] names queue 'hot', which is not in QUEUES, "
        "so no task can be enqueued to it."
    )
    assert "on a single Redis, where every shard shares one CPU" in messages[1].msg
