"""A LOCATION query number that redis-py before 8.0 passes on as text is refused, with the fix.

redis-py 6 and 7 read no ``socket_read_size`` from a URL: ``?socket_read_size=65536`` reached the
connection as the text '65536', and every sync call failed with a bare "TypeError: 'str' object
cannot be interpreted as an integer". Those redis-py versions are simulated by taking the reader
out of redis-py's table of URL query readers, which is all they lack here.
"""

import pytest
import redis
import redis.connection
from django.core.exceptions import ImproperlyConfigured

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.conf.settings import read_settings
from testproject.example.tasks import echo

READERS = redis.connection.URL_QUERY_ARGUMENT_PARSERS


@pytest.fixture
def redis_py_before_8(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read URLs as redis-py 6 and 7 do: no reader for socket_read_size."""
    if "socket_read_size" in READERS:
        monkeypatch.delitem(READERS, "socket_read_size")


@pytest.mark.usefixtures("redis_py_before_8")
def test_a_query_number_left_as_text_is_refused_naming_the_setting() -> None:
    location = "redis://:s3cret@h:6379/0?socket_read_size=65536"
    message = (
        "TASKS['default']['LOCATION'] is 'redis://:***@h:6379/0?socket_read_size=65536', whose "
        f"query sets 'socket_read_size', which redis-py {redis.__version__} passes on as text, "
        "failing every call (redis-py 8.0+ reads it as a number). Set "
        "OPTIONS['connection_options']['socket_read_size'] to a number instead and drop it "
        "from LOCATION, or upgrade redis-py."
    )
    with pytest.raises(ImproperlyConfigured) as refused:
        read_settings("default", {"LOCATION": location})
    assert str(refused.value) == message


@pytest.mark.usefixtures("redis_py_before_8")
def test_the_setting_it_names_works(redis_url: str, key_prefix: str) -> None:
    backend = ThreadmillTaskBackend(
        "default",
        {
            "LOCATION": redis_url,
            "OPTIONS": {
                "key_prefix": key_prefix,
                "connection_options": {"socket_read_size": 65536},
            },
        },
    )
    result = backend.enqueue(echo, ["hello"], {})
    assert backend.get_result(result.id).args == ["hello"]


@pytest.mark.skipif("socket_read_size" not in READERS, reason="redis-py 8.0+ reads it")
def test_a_redis_py_that_reads_it_takes_it_from_the_query(redis_url: str, key_prefix: str) -> None:
    backend = ThreadmillTaskBackend(
        "default",
        {"LOCATION": f"{redis_url}?socket_read_size=65536", "OPTIONS": {"key_prefix": key_prefix}},
    )
    result = backend.enqueue(echo, ["hello"], {})
    assert backend.get_result(result.id).args == ["hello"]
