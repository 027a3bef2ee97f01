"""An ``async def`` task that runs pure Python on the event loop without awaiting, for
tests/worker/test_a_task_spinning_on_the_loop_is_named_though_the_monitor_waits_for_the_gil.py;
at module level so worker processes import it."""

import sys
import time

from django_threadmill.compat import task

# How long a thread waiting for the GIL waits before it asks the holder to drop it, while the
# task spins: 0.1 s, against Python's 5 ms, makes the loop monitor's every look wait on the GIL
# the task holds, as the other threads of a busy process make it wait.
CONTENDED_SWITCH_S = 0.1


@task
async def spin(seconds: float) -> float:
    """Hold the event loop in pure Python for ``seconds``, never awaiting: the mistake under
    test."""
    usual = sys.getswitchinterval()
    sys.setswitchinterval(CONTENDED_SWITCH_S)
    try:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            pass
    finally:
        sys.setswitchinterval(usual)
    return seconds
