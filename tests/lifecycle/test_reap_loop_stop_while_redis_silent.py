"""A stop while ``threadmill_reap``'s loop waits on a Redis that takes connections and never
answers (paused, a frozen host): the pass held the stop for ``socket_timeout`` per call; now
the loop leaves the pass behind and exits 0 at once (docs/lifecycle.md, ``manage.py
threadmill_reap``)."""

import signal

from tests.faults.support import waiting_on_paused
from tests.servers.redis_server import redis_process
from tests.support import Command

# Far past the deadline below: a stop that waits for the pass fails the test, whatever the load.
SILENT = {"socket_timeout": 120}
# What the command may take to exit once stopped on a loaded machine: a deadline, not a measure.
EXIT_DEADLINE_S = 30.0


def test_a_sigterm_while_a_reap_pass_waits_on_a_paused_redis_exits_0_at_once(
    key_prefix: str,
) -> None:
    with redis_process() as server:
        loop = Command(
            server.url, key_prefix, "threadmill_reap", "--interval", "0.05", options=SILENT
        )
        try:
            loop.wait_for_log("Reaper started")
            with waiting_on_paused(server, loop.process):
                loop.signal(signal.SIGTERM)
                code = loop.wait(EXIT_DEADLINE_S)
            log = loop.log
        finally:
            loop.close()
    assert code == 0, log
    assert "Reaper stopping signal=SIGTERM" in log
    assert (
        "Reaper stopping without waiting for Redis call=reap (it has not answered; the command "
        "exits without it)" in log
    )
    assert "Reaper stopped backend=default passes=" in log
    assert "Traceback" not in log
