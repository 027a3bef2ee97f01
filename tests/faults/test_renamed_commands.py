"""A Redis with a command renamed away (rename-command): a clear refusal, not a raw reply."""

from collections.abc import Iterator

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerRefused
from testproject.example.tasks import echo
from tests.servers.redis_server import RedisProcess, redis_process
from tests.support import unknown_command_words


@pytest.fixture(scope="module")
def server() -> Iterator[RedisProcess]:
    with redis_process("--rename-command", "INFO", "") as started:
        yield started


@pytest.fixture
def redis_url(server: RedisProcess) -> str:
    return server.url


def test_a_renamed_command_is_named_with_the_fix(backend: ThreadmillTaskBackend) -> None:
    with pytest.raises(BrokerRefused) as refused:
        echo.enqueue(1)
    message = str(refused.value)
    assert f"does not know a command this backend sends ({unknown_command_words('INFO')}" in message
    assert "renamed or disabled (rename-command in its config). Enable it" in message
