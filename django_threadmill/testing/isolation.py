"""Test processes that run at once against one Redis get a key prefix each, by themselves.

pytest-xdist names its workers in ``PYTEST_XDIST_WORKER`` (``gw0``, ``gw1``, ...), and Django's
``manage.py test --parallel`` numbers its own (``django.test.runner._worker_id``, set in each
worker after the settings were read, so settings cannot use it). The ``threadmill`` fixture
and ``ThreadmillTestMixin`` run their tests with every ThreadmillTaskBackend's ``key_prefix``
suffixed by that name: one worker's flush no longer deletes another's tasks, and no drain runs
another test's tasks against its own database.
"""

import os
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from django.conf import settings
from django.test import override_settings
from django.test import runner as django_runner

from ..aliases import threadmill_aliases, threadmill_backend
from ..conf.settings import KEY_PREFIX_MAX_CHARS
from ..exceptions import ImproperlyConfiguredThreadmill


def parallel_worker() -> str | None:
    """Return the name of this test process among those running at once, or None."""
    xdist = os.environ.get("PYTEST_XDIST_WORKER")
    if xdist:
        return xdist
    number = getattr(django_runner, "_worker_id", 0)  # 0 outside a parallel run's workers
    return f"django{number}" if number else None


def own_key_prefixes() -> AbstractContextManager[Any]:
    """Return a context in which each ThreadmillTaskBackend's key_prefix ends with this test
    process's name; nothing changes outside a parallel run."""
    tasks = suffixed_tasks()
    return nullcontext() if tasks is None else override_settings(TASKS=tasks)


def suffixed_tasks() -> dict[str, dict[str, Any]] | None:
    """Return ``TASKS`` with each ThreadmillTaskBackend's key_prefix ending with this test
    process's name, or None outside a parallel run."""
    worker = parallel_worker()
    if worker is None:
        return None
    tasks: dict[str, dict[str, Any]] = {alias: dict(p) for alias, p in settings.TASKS.items()}
    for alias in threadmill_aliases():
        prefix = threadmill_backend(alias).settings.key_prefix
        if prefix.endswith(f"-{worker}"):  # already the process's own
            continue
        options = dict(tasks[alias].get("OPTIONS", {}))
        tasks[alias]["OPTIONS"] = {**options, "key_prefix": _suffixed(alias, prefix, worker)}
    return tasks


def _suffixed(alias: str, prefix: str, worker: str) -> str:
    """Return ``prefix`` ending with ``-worker``; raise, naming the fix, if that is too long to
    be a key prefix: the backend would refuse it naming a prefix the settings never wrote."""
    suffixed = f"{prefix}-{worker}"
    if len(suffixed) > KEY_PREFIX_MAX_CHARS:
        room = KEY_PREFIX_MAX_CHARS - len(worker) - 1
        raise ImproperlyConfiguredThreadmill(
            f"TASKS[{alias!r}] OPTIONS['key_prefix'] {prefix!r} ({len(prefix)} characters) "
            f"leaves no room for the '-{worker}' this test process adds to it, so that its "
            "keys are apart from those of the test processes running beside it "
            f"(docs/testing.md, Keys are flushed around each test): a key prefix is at most "
            f"{KEY_PREFIX_MAX_CHARS} characters. Give the tests a key_prefix of {room} "
            "characters or fewer."
        )
    return suffixed
