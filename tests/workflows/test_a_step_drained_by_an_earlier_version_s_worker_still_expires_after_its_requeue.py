"""A step's outbox entry drained by a worker of an earlier version, as in a rolling deploy, leaves
its record to expire after ``result_ttl`` once the step is requeued and ends again.

Versions before a step's record counted its outbox entries (``outboxed``) take an entry out
without counting it down: the count this version's finish wrote stayed at 1. Once the step was
requeued (the admin's retry) and ended again, this version's drain read one more entry waiting
and never gave the record its expiry: kept for good.
"""

import shutil
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path

import pytest

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.workflows import chain, step
from django_threadmill.workflows.advance import drain
from tests.backend_support import fail
from tests.support import ROOT, command_env

from .tasks import add, boom

# The last commit before the count: its drainer takes entries out with LREM and LPOS alone.
EARLIER = "8bcb57ea6d5046185773e245af5d94e9bba21ea4"
# What its worker command needs of that checkout: the package, the project, the step's tasks.
EARLIER_PATHS = (
    "django_threadmill",
    "testproject",
    "manage.py",
    "tests/__init__.py",
    "tests/workflows",
)


@pytest.fixture
def earlier_checkout(tmp_path: Path) -> Path:
    """Return a directory holding the files of ``EARLIER`` its worker command runs from."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed: the earlier version's files come from this clone")
    known = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{EARLIER}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    if known.returncode != 0:
        pytest.skip(f"commit {EARLIER[:7]} is not in this clone (a shallow one): fetch its history")
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", EARLIER, *EARLIER_PATHS],
        capture_output=True,
        check=True,
    )
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as files:
        files.extractall(tmp_path, filter="data")
    return tmp_path


def test_a_step_an_earlier_worker_drained_expires_after_its_requeue_and_new_end(
    backend: ThreadmillTaskBackend, redis_url: str, key_prefix: str, earlier_checkout: Path
) -> None:
    flow = chain(step(boom, 0), step(add, 1)).enqueue()
    failing = flow.steps[0].task_id
    client, record = backend.broker.client, backend.broker.record_key(failing)
    outbox = backend.broker.queue_keys("default").outbox
    fail(backend, failing, ValueError("down"))  # this version's finish counts its entry
    assert client.hget(record, "outboxed") == "1"

    earlier = subprocess.run(
        [sys.executable, "manage.py", "threadmill_worker", "--processes", "0", "--burst"],
        cwd=earlier_checkout,
        env={**command_env(redis_url, key_prefix), "PYTHONPATH": str(earlier_checkout)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert earlier.returncode == 0, earlier.stdout + earlier.stderr
    assert client.llen(outbox) == 0  # the earlier worker drained it
    assert client.pttl(record) > 0

    assert backend.requeue(failing)  # the admin's retry, once this version runs alone
    fail(backend, failing, ValueError("down again"))
    drain(backend, "default")

    assert client.llen(outbox) == 0
    assert client.pttl(record) > 0  # -1: kept for good
    assert client.hget(record, "outboxed") is None
