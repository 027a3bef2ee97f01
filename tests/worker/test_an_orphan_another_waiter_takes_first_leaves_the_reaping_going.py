"""An ended child that another waiter takes between the supervisor's look and its wait.

The supervisor at PID 1 looks at an ended child (``WNOWAIT``), then waits for it. A call the
stop left running (a schedule's receiver waiting on its subprocess) may take it in between: the
wait then raised ``ChildProcessError``, uncaught, and the stopping supervisor crashed. The reaping
goes on with the next child now. Run in a process of its own: the look reaps any ended child.
"""

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os

    from django_threadmill.worker import orphans

    taken, other = os.fork(), None
    if taken == 0:
        os._exit(3)
    real_waitid = os.waitid
    real_waitid(os.P_PID, taken, os.WEXITED | os.WNOWAIT)  # ended, not waited for yet

    def look_then_taken_by_another(idtype, pid, options):
        ended = real_waitid(idtype, pid, options)
        if idtype == os.P_ALL and ended is not None and ended.si_pid == taken:
            os.waitpid(taken, 0)  # the other waiter, between the look and the wait
        return ended

    orphans.os.waitid = look_then_taken_by_another
    second = os.fork()
    if second == 0:
        os._exit(4)
    os.waitid(os.P_PID, second, os.WEXITED | os.WNOWAIT)  # ended, not waited for yet
    orphans.reap_orphans()
    try:
        os.waitpid(second, os.WNOHANG)
    except ChildProcessError:
        print("every child waited for")
    """
)


def test_a_child_another_waiter_took_first_is_passed_over_and_the_next_is_reaped() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "every child waited for"
