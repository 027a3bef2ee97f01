"""A ``sitecustomize`` that SIGKILLs a process in the middle of advancing a workflow, once.

Put this directory's copy on PYTHONPATH (``dying_env``): the first time the process reaches
the point named by ``THREADMILL_TEST_DIE_AT`` it creates ``THREADMILL_TEST_DIED_FILE`` and
kills itself with SIGKILL, as a crash or the OOM killer would; afterwards (the file exists) it
runs normally.

- ``after-advance``: the step's finish landed and advance.lua recorded it, before the next
  step is enqueued;
- ``after-enqueue``: the next step is stored, before it is marked enqueued and before the
  outbox entry is taken out.
"""

import os
import signal

DIE_AT = os.environ.get("THREADMILL_TEST_DIE_AT", "")
DIED_FILE = os.environ.get("THREADMILL_TEST_DIED_FILE", "")


def _die_once() -> None:
    try:
        fd = os.open(DIED_FILE, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


def _dying_after(original):  # type: ignore[no-untyped-def]
    def call(*args, **kwargs):  # type: ignore[no-untyped-def]
        reply = original(*args, **kwargs)
        _die_once()
        return reply

    return call


if DIE_AT:
    from django_threadmill.broker.workflows import Workflows

    if DIE_AT == "after-advance":
        Workflows.advance_workflow = _dying_after(Workflows.advance_workflow)
    elif DIE_AT == "after-enqueue":
        from django_threadmill.broker.enqueue import Enqueueing

        Enqueueing.enqueue_groups = _dying_after(Enqueueing.enqueue_groups)
