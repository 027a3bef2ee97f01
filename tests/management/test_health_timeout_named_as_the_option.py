"""threadmill_health names its own --timeout when Redis does not answer within it.

The probe's broker waits ``--timeout`` for each reply (``waiting_at_most``), so the read error
said "did not answer within socket_timeout=0.3s": a setting the probe's user did not set, and
whose value in TASKS is another.
"""

import socket
from collections.abc import Iterator

import pytest

from django_threadmill.management.commands.threadmill_health import one_line
from django_threadmill.management.health import HealthCode
from tests.management.test_health import HOST, probe_at


@pytest.fixture
def silent_redis() -> Iterator[str]:
    """A port that accepts connections and never answers: a Redis hung or black-holed."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"redis://127.0.0.1:{listener.getsockname()[1]}/0"


def test_a_redis_that_does_not_answer_within_timeout_is_said_to_in_the_options_words(
    silent_redis: str, key_prefix: str
) -> None:
    hung = probe_at(silent_redis, key_prefix, "--timeout", "0.3")

    assert hung.returncode == HealthCode.UNREACHABLE
    line = one_line(hung.stderr)
    said = f"Unhealthy host={HOST}: Redis at {silent_redis} did not answer within --timeout=0.3s ("
    assert said in line
    assert "socket_timeout" not in line
