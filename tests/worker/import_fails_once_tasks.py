"""An ``async def`` task whose module raises the first time a process imports it, as a
module-level query made before the database was up would, and imports the next time: in a
process whose environment sets FAIL_FIRST_IMPORT (a worker the test starts so)."""

import os
import sys
import threading

from django_threadmill.compat import task

# Kept on ``sys``: a module whose import raised is dropped, with its globals.
FAIL_FIRST_IMPORT = "THREADMILL_TEST_FAIL_FIRST_IMPORT"
if os.environ.get(FAIL_FIRST_IMPORT) and not getattr(sys, "threadmill_test_failed_once", False):
    sys.threadmill_test_failed_once = True  # type: ignore[attr-defined]
    raise RuntimeError("the database is not up yet")


@task()
async def awaited(n: int) -> list[object]:
    """Return ``n + 1`` and the name of the thread that ran it."""
    return [n + 1, threading.current_thread().name]
