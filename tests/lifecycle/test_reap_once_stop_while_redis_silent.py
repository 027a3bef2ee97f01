"""A stop while ``threadmill_reap --once`` or ``--dry-run`` waits on a Redis that takes
connections and never answers (paused, a frozen host): their one pass ran on the main thread,
so a SIGTERM killed the command without a word (no stop line, the signal's own exit status)
and a Ctrl-C printed a KeyboardInterrupt traceback; now they leave the pass behind and exit 0
at once, with the loop's lines (docs/lifecycle.md, ``manage.py threadmill_reap``)."""

import signal
import threading

import pytest
import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.broker import Broker
from tests.faults.support import waiting_on_paused
from tests.servers.redis_server import redis_process
from tests.support import Command, output_of

from .support import run, wait_for_expiry
from .tasks import plain

# Far past the deadline below: a stop that waits for the pass fails the test, whatever the load.
SILENT = {"socket_timeout": 120}
# What the command may take to exit once stopped on a loaded machine: a deadline, not a measure.
EXIT_DEADLINE_S = 30.0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
@pytest.mark.parametrize("mode", ["--once", "--dry-run"])
def test_a_stop_while_a_single_pass_waits_on_a_paused_redis_exits_0_at_once(
    key_prefix: str, mode: str, signum: signal.Signals
) -> None:
    with redis_process() as server:
        # --skip-checks: the request left unread is the pass's, not the system checks' (a stop
        # during those is tests/worker/test_stop_while_redis_silent_at_start.py's).
        command = Command(
            server.url, key_prefix, "threadmill_reap", mode, "--skip-checks", options=SILENT
        )
        try:
            with waiting_on_paused(server, command.process):
                command.signal(signum)
                code = command.wait(EXIT_DEADLINE_S)
            log = command.log
        finally:
            command.close()
    assert code == 0, log
    assert f"Reaper stopping signal={signum.name}" in log
    assert (
        "Reaper stopping without waiting for Redis call=reap (it has not answered; the command "
        "exits without it)" in log
    )
    assert "Traceback" not in log


@pytest.mark.usefixtures("logging_put_back")
def test_once_called_from_a_thread_still_runs_its_pass(
    backend: ThreadmillTaskBackend, broker: Broker, redis_client: redis.Redis
) -> None:
    """Signal handlers can be set on the main thread only: ``call_command`` from another
    thread (a scheduler's job) runs the pass there, as before, instead of failing to listen."""
    plain.enqueue()
    run(broker)
    wait_for_expiry(broker, redis_client)
    printed: list[str] = []
    reaper = threading.Thread(
        target=lambda: printed.append(output_of("threadmill_reap", "--once")),
        name="threadmill-test-scheduler",
    )
    reaper.start()
    reaper.join()
    (output,) = printed
    assert "Settled queue=default released=0 failed=1 retried=0 stale=0 set_aside=0\n" in output
