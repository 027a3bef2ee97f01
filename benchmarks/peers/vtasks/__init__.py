"""django-vtasks: ValkeyTaskBackend against the same Redis, `manage.py runworker`; no results.

django-vtasks keeps no result: its worker discards the return value and acknowledges a task by
removing it from its processing list (`_ack_task` is one LREM). So a task counts as done once it
has left both the queue list and the worker's processing list.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import redis

from ..base import Peer, RunContext, WorkerSpec

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

    @contextmanager
    def counter(self, context: RunContext) -> Iterator[Callable[[], int]]:
        """Count the staged tasks once, then the ones no longer queued nor being processed."""
        with redis.Redis.from_url(context.direct_redis_url) as client:
            staged = int(client.llen(QUEUE))
            if not staged:  # else the watcher would wait for its timeout, counting nothing
                raise RuntimeError(f"No task staged in {QUEUE}: has django-vtasks renamed it?")

            def done() -> int:
                # The queue first: a task moving to the processing list in between is counted
                # as not done (twice), never as done early.
                pipe = client.pipeline(transaction=False)
                pipe.llen(QUEUE)
                pipe.llen(PROCESSING)
                waiting, running = pipe.execute()
                return staged - int(waiting) - int(running)

            yield done
