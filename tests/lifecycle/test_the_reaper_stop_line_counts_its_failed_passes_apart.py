"""``threadmill_reap``'s stop line counts the passes that failed apart from the others.

It said ``passes=N`` counting a pass Redis never answered as one made: a loop that ran through
an outage, reaping nothing, read as having reaped N times (docs/lifecycle.md, ``manage.py
threadmill_reap``).
"""

import re
import signal

from tests.servers.redis_server import free_port
from tests.support import Command


def test_a_loop_whose_every_pass_failed_says_each_failed(key_prefix: str) -> None:
    nowhere = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens: every pass fails
    loop = Command(nowhere, key_prefix, "threadmill_reap", "--interval", "0.2")
    try:
        loop.wait_for_log(r"Reap pass failed, retrying next interval error=.*is unreachable")
        loop.signal(signal.SIGTERM)
        assert loop.wait() == 0, loop.log
        log = loop.log
    finally:
        loop.close()
    stopped = re.search(
        r"Reaper stopped backend=default passes=(\d+) failed_passes=(\d+)$", log, re.M
    )
    assert stopped, log
    passes, failed = int(stopped[1]), int(stopped[2])
    assert passes >= 1, log
    assert failed == passes, log
