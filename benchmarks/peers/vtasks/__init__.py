"""django-vtasks: ValkeyTaskBackend against the same Redis, `manage.py runworker`; no results.

django-vtasks keeps no result: its worker discards the return value and acknowledges a task by
removing it from its processing list (`_ack_task` is one LREM). So a task counts as done once it
has left both the queue list and the worker's processing list.
"""

from collections.abc import Callable
from contextlib import AbstractContextManager

from ..base import Peer, RunContext, WorkerSpec, staged_counter

WORKER_ID = "bench"  # --id: fixes the name of the worker's processing list
KEY_PREFIX = "{vt}:"  # the default VTASKS_VALKEY_PREFIX, with the colon the backend adds
QUEUE = f"{KEY_PREFIX}q:default"
PROCESSING = f"{KEY_PREFIX}processing:{WORKER_ID}"


class VtasksPeer(Peer):
    name = "vtasks"
    label = "django-vtasks (no results)"
    distribution = "django-vtasks"
    module = "django_vtasks"
    read_ahead = "none (one BLMOVE per task, as shipped)"
    poll_commands = ("llen", "llen")

    def env(self, context: RunContext) -> dict[str, str]:
        return {
            **super().env(context),
            "DJANGO_SETTINGS_MODULE": "benchmarks.peers.vtasks.settings",
        }

    def worker_argv(self, spec: WorkerSpec) -> list[str]:
        # --concurrency bounds the tasks in flight; sync tasks run on asyncio's thread pool.
        return self.python(
            "-m", "django", "runworker", "--concurrency", str(spec.threads), "--id", WORKER_ID
        )

    def counter(self, context: RunContext) -> AbstractContextManager[Callable[[], int]]:
        """Count the staged tasks once, then the ones no longer queued nor being processed."""
        return staged_counter(context.direct_redis_url, ("LLEN", QUEUE), ("LLEN", PROCESSING))
