"""A call of ``enqueue_many`` whose ``unique_key`` raises is named, and nothing is stored.

``unique_key`` is the project's own code, run once per call before anything is sent; an
``IndexError`` from call 1,234 of 10,000 left the caller to guess which call it was.
"""

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from tests.unique.tasks import refresh_account

PATH = "tests.unique.tasks.refresh_account"


def test_the_error_keeps_its_type_and_names_the_call(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, key_prefix: str
) -> None:
    calls = [((1, "first"), {}), ((), {"account": 2, "reason": "by name"}), ((3, "third"), {})]
    with pytest.raises(IndexError) as raised:  # its unique_key reads args[0]
        backend.enqueue_many(refresh_account, calls)
    assert raised.value.__notes__ == [
        f"Call 1 (counting from 0) of enqueue_many() for task {PATH!r} was refused, so none "
        "of its 3 calls were stored."
    ]
    assert list(redis_client.scan_iter(f"{key_prefix}:*")) == []
