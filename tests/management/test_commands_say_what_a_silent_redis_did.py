"""What the commands say when Redis does not answer in time: what happened, whether their call
may have been applied, and how to see whether it was.

Before, a write Redis did not answer (its writes paused, or busy) read as Redis gone: "is
unreachable (Timeout reading from …). Start Redis or fix TASKS LOCATION; the call may have
been applied before the connection dropped.", and ``threadmill_queue pause`` said no more, not
whether the queue was paused now nor how to see it. A read ended "nothing was changed: retry
the read.", advice for ``get_result`` that a probe, a pause and a reap pass printed too. And a
reap pass whose every queue may have settled leases said "none was reaped".
"""

import socket
import subprocess
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import MaybeApplied
from django_threadmill.management.health import HealthCode
from tests.faults.support import paused
from tests.management.test_queue_command_output_cut_short import plant
from tests.servers.redis_server import RedisProcess
from tests.support import run_python

SOCKET_TIMEOUT_S = 0.5  # a Redis that does not answer fails each call after this
HOST = socket.gethostname()
WRITES_PAUSED_MS = 600_000  # CLIENT PAUSE ... WRITE, lifted by the test
SILENT = (
    "did not answer within {timeout} (Timeout reading from 127.0.0.1:{port}): it is busy (a "
    "long script or command: SLOWLOG GET), overloaded or frozen"
)
UNNAMED_TIMEOUT = "(Timeout reading from socket)"  # redis-py's words where it names no address
# How a write's error goes on: a write Redis holds back (a failover) is silent as well.
MAYBE_APPLIED = (
    ", or holds writes back (a FAILOVER under way, a CLIENT PAUSE WRITE: INFO replication, "
    "master_failover_state); the call may have been applied, or may still be once Redis goes on."
)


@pytest.fixture
def redis_url(own_redis: RedisProcess) -> str:
    return own_redis.url


@pytest.fixture
def tasks_options() -> dict[str, object]:
    return {"socket_timeout": SOCKET_TIMEOUT_S}


@pytest.fixture
def writes_paused(own_redis: RedisProcess) -> Iterator[redis.Redis]:
    """Hold every write sent to ``own_redis`` (reads go on) until the test ends."""
    with redis.Redis.from_url(own_redis.url) as admin:
        admin.client_pause(WRITES_PAUSED_MS, all=False)
        try:
            yield admin
        finally:
            admin.client_unpause()


def silent(server: RedisProcess, timeout: str = f"socket_timeout={SOCKET_TIMEOUT_S:g}s") -> str:
    """Return how an error names ``server`` not answering within ``timeout``."""
    return f"Redis at {server.url} " + SILENT.format(timeout=timeout, port=server.port)


def command(server: RedisProcess, key_prefix: str, *argv: str) -> tuple[int, str]:
    """Run ``manage.py argv`` on ``server``; return its exit code and its last stderr line,
    with redis-py's timeout naming ``server`` whichever parser read the reply."""
    ended: subprocess.CompletedProcess[str] = run_python(
        "manage.py",
        *argv,
        redis_url=server.url,
        key_prefix=key_prefix,
        options={"socket_timeout": SOCKET_TIMEOUT_S},
    )
    # The commands pass redis-py's words on. Its pure-Python parser says "Timeout reading from
    # socket" on redis-py 6 and 7 (no hiredis installed); hiredis, and redis-py 8, name the
    # address. The error names the server before either way: "Redis at redis://...".
    named = f"(Timeout reading from 127.0.0.1:{server.port})"
    return ended.returncode, ended.stderr.splitlines()[-1].replace(UNNAMED_TIMEOUT, named)


@pytest.mark.parametrize(
    ("action", "says"),
    [
        ("pause", "it pauses the queue, or says it was paused already."),
        ("resume", "it resumes the queue, or says it was not paused."),
    ],
    ids=["pause", "resume"],
)
def test_a_pause_or_resume_redis_did_not_answer_says_how_to_see_if_it_was_made(
    own_redis: RedisProcess, key_prefix: str, writes_paused: redis.Redis, action: str, says: str
) -> None:
    code, line = command(own_redis, key_prefix, "threadmill_queue", action, "emails")
    assert code == 1
    assert line == (
        f"CommandError: {silent(own_redis)}{MAYBE_APPLIED} To see whether it was applied, run "
        f"'manage.py threadmill_queue {action} emails' again once Redis answers: {says}"
    )


@pytest.mark.parametrize("forget", [["x"], ["--all"]], ids=["ids", "all"])
def test_a_forget_redis_did_not_answer_says_where_to_see_what_is_left(
    own_redis: RedisProcess, key_prefix: str, writes_paused: redis.Redis, forget: list[str]
) -> None:
    code, line = command(
        own_redis, key_prefix, "threadmill_queue", "forget-damaged", "emails", *forget
    )
    assert code == 1
    assert line == (
        f"CommandError: {silent(own_redis)}{MAYBE_APPLIED} To see whether it was applied, list "
        "the entries left with 'manage.py threadmill_queue damaged emails'."
    )


def test_forget_all_cut_off_midway_says_the_batch_may_be_dropped_unlisted(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: "the next batch failed: … may have been applied …", then "The rest are kept",
    as if that batch were among them."""
    monkeypatch.setattr(backend.broker, "MAX_LISTED", 2)
    plant(backend, redis_client, "emails", 5)
    run = backend.broker._run
    calls: list[object] = []

    def cut_off_the_third(call: Any, **options: Any) -> Any:
        calls.append(call)
        if len(calls) == 3:
            raise MaybeApplied(f"Redis at x {SILENT}{MAYBE_APPLIED}")
        return run(call, **options)

    monkeypatch.setattr(backend.broker, "_run", cut_off_the_third)
    with pytest.raises(CommandError) as stopped:
        call_command("threadmill_queue", "forget-damaged", "emails", "--all", stdout=StringIO())

    assert str(stopped.value) == (
        "Forgot 4 damaged record(s) of queue emails, then stopped: those listed above; the "
        f"next batch failed, and may have been dropped unlisted: Redis at x {SILENT}"
        f"{MAYBE_APPLIED.rstrip('.')}. The rest are kept: 'manage.py threadmill_queue damaged "
        "emails' lists them."
    )


@pytest.mark.parametrize(
    ("argv", "code", "framing", "timeout"),
    [
        (
            ["threadmill_health", "--timeout", "0.5"],
            HealthCode.UNREACHABLE,
            f"Unhealthy host={HOST}: ",
            "--timeout=0.5s",
        ),
        (["threadmill_queue", "pause", "emails"], 1, "", None),
        (["threadmill_queue", "damaged"], 1, "", None),
        (["threadmill_reap", "--once", "--skip-checks"], 1, "", None),
    ],
    ids=["health", "pause", "damaged", "reap"],
)
def test_a_frozen_redis_is_said_to_have_changed_nothing_without_read_advice(
    own_redis: RedisProcess,
    key_prefix: str,
    argv: list[str],
    code: int,
    framing: str,
    timeout: str | None,
) -> None:
    """A pause's first call reads Redis's clock: frozen there, the queue was not paused."""
    with paused(own_redis):
        ended = command(own_redis, key_prefix, *argv)
    said = silent(own_redis, timeout) if timeout else silent(own_redis)
    assert ended == (code, f"CommandError: {framing}{said}; nothing was changed.")


def test_a_reap_whose_every_queue_may_have_settled_leases_does_not_say_none_was(
    own_redis: RedisProcess, key_prefix: str, backend: ThreadmillTaskBackend
) -> None:
    # An earlier pass noted the server, so this one reads it and goes on to the reap calls.
    backend.broker.ms_since_server_seen()
    with redis.Redis.from_url(own_redis.url) as admin:
        admin.client_pause(WRITES_PAUSED_MS, all=False)
        try:
            code, line = command(
                own_redis, key_prefix, "threadmill_reap", "--once", "--skip-checks"
            )
        finally:
            admin.client_unpause()
    assert code == 1
    assert line == (
        "CommandError: Reap of every queue failed (default, emails and reports), some perhaps "
        f"after settling leases: {silent(own_redis)}{MAYBE_APPLIED}"
    )
