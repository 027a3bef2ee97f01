"""Redis losing its Lua scripts again just after a call reloaded them (a SCRIPT FLUSH, a restart
or a failover between the reload and the call sent again).

A call that meets NOSCRIPT loads its script and is sent once more (broker/calls.py); a second
NOSCRIPT came out as redis-py's bare ``NoScriptError``: an enqueue raised it instead of
``BrokerUnavailable``, and in a worker it killed the thread that met it (the prefetcher, the ack
writer with the results it held) and the supervisor's reap pass. It is now ``BrokerUnavailable``
naming what happened, which every caller retries.
"""

import re
import signal
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.exceptions import BrokerUnavailable
from tests.support import Command, wait_until

from . import tasks
from .support import all_successful, enqueue_counted, executions

LOST_AGAIN = r"lost this backend's Lua scripts again just after they were loaded"
CRASHED = r"Thread died|Traceback"  # a worker thread's end, or the supervisor's

# The worker command, in which Redis forgets every script just loaded while the file argv[1]
# exists: each call's reload is followed by a SCRIPT FLUSH. argv[2:]: the command's options.
FLUSH_AFTER_EACH_LOAD = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    import redis
    from django.core.management import execute_from_command_line

    flushing, load = Path(sys.argv[1]), redis.Redis.script_load

    def load_then_lost(self, script):
        sha = load(self, script)
        if flushing.exists():
            self.script_flush()
        return sha

    redis.Redis.script_load = load_then_lost
    execute_from_command_line(["manage.py", "threadmill_worker", *sys.argv[2:]])
    """
)


@pytest.fixture
def scripts_lost_after_each_load(backend: ThreadmillTaskBackend) -> Iterator[None]:
    """Make the backend's Redis forget every script right after the client loads one."""
    client = backend.broker.client
    load = client.script_load

    def load_then_lost(script: str) -> str:
        sha = load(script)
        client.script_flush()
        return sha

    client.script_load = load_then_lost  # type: ignore[method-assign]
    client.script_flush()
    yield
    del client.script_load


@pytest.mark.usefixtures("scripts_lost_after_each_load")
def test_an_enqueue_whose_scripts_went_again_says_so_and_wrote_nothing(
    backend: ThreadmillTaskBackend, redis_client: redis.Redis, key_prefix: str, tmp_path: Path
) -> None:
    with pytest.raises(BrokerUnavailable, match=f"{LOST_AGAIN}.*nothing was written: try it"):
        tasks.count_run.enqueue(str(tmp_path / "runs.log"))
    assert not list(redis_client.scan_iter(f"{key_prefix}:*:t:*"))


@pytest.mark.timeout(120)
def test_a_worker_whose_scripts_go_again_retries_and_runs_every_task_once(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, tmp_path: Path
) -> None:
    log, flushing = tmp_path / "runs.log", tmp_path / "flushing"
    results = enqueue_counted(backend, log, 20)
    flushing.touch()
    command = Command(
        redis_url, key_prefix, str(flushing), "--processes", "1", "--reap-interval", "1",
        code=FLUSH_AFTER_EACH_LOAD,
    )  # fmt: skip
    try:
        for retried in ("Fetch failed, retrying in", "Reap pass failed error="):
            command.wait_for_log(f"{retried}.*{LOST_AGAIN}|{CRASHED}")
        assert not re.search(CRASHED, command.log), command.log
        flushing.unlink()
        wait_until(lambda: all_successful(results), "every task SUCCESSFUL")
        command.signal(signal.SIGTERM)
        assert command.wait(60) == 0, command.log
        assert not re.search(CRASHED, command.log), command.log
    finally:
        command.close()
    assert executions(log) == {result.id: 1 for result in results}
