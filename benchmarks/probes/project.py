"""The test project, set up in a probe's own process: Redis at ``REDIS_URL`` or a throwaway
redis-server, a key prefix of the probe's own, Django set up, and its keys flushed at the end.
"""

import os
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import django

from tests.servers.redis_server import redis_process


@contextmanager
def probe_project(probe: str) -> Iterator[ExitStack]:
    """Set up the test project for ``probe`` (its keys are named after it); yield the stack
    that undoes it, for the probe's own clean-up."""
    with ExitStack() as stack:
        url = os.environ.get("REDIS_URL") or stack.enter_context(redis_process()).url
        os.environ.update(
            REDIS_URL=url,
            THREADMILL_KEY_PREFIX=f"{probe}-{uuid.uuid4().hex[:8]}",
            DJANGO_SETTINGS_MODULE="testproject.settings",
        )
        django.setup()
        from django_threadmill.testing import flush

        stack.callback(flush)
        yield stack
