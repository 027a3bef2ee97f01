"""celery: Redis broker (db 0) and Redis result backend (db 1), thread pool."""

from collections.abc import Callable
from contextlib import AbstractContextManager

from ..base import Peer, RunContext, WorkerSpec, redis_counter, with_db


class CeleryPeer(Peer):
    name = "celery"
    label = "celery"
    distribution = "celery"
    module = "celery"
    read_ahead = "128 (--prefetch-multiplier 128/threads)"
    poll_commands = ("dbsize",)

    def worker_argv(self, spec: WorkerSpec) -> list[str]:
        # Gossip, mingle and heartbeats talk to other workers; a lone benchmark worker skips them.
        return self.python(
            "-m",
            "celery",
            "-A",
            "benchmarks.peers.celery.app",
            "worker",
            "--pool",
            "threads",
            "--concurrency",
            str(spec.threads),
            "--prefetch-multiplier",
            str(max(1, spec.prefetch // spec.threads)),
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
            "--loglevel",
            "WARNING",
        )

    def counter(self, context: RunContext) -> AbstractContextManager[Callable[[], int]]:
        return redis_counter(with_db(context.direct_redis_url, 1), "DBSIZE")
