"""dramatiq: RedisBroker with the Results middleware (results in db 1), `dramatiq` CLI."""

from collections.abc import Callable
from contextlib import AbstractContextManager

from ..base import Peer, RunContext, WorkerSpec, redis_counter, with_db


class DramatiqPeer(Peer):
    name = "dramatiq"
    label = "dramatiq"
    distribution = "dramatiq"
    module = "dramatiq"
    read_ahead = "128 (dramatiq_queue_prefetch)"
    poll_commands = ("dbsize",)
    supports_pickup = True

    def env(self, context: RunContext) -> dict[str, str]:
        return {**super().env(context), "dramatiq_queue_prefetch": "128"}

    def worker_env(self, spec: WorkerSpec) -> dict[str, str]:
        # The consumer holds at most this many unacknowledged messages: at or above the tasks
        # in flight (--threads), or they would wait on it.
        return {"dramatiq_queue_prefetch": str(spec.prefetch)}

    def worker_argv(self, spec: WorkerSpec) -> list[str]:
        return self.python(
            "-m",
            "dramatiq",
            "benchmarks.peers.dramatiq.tasks",
            "--processes",
            str(spec.processes),
            "--threads",
            str(spec.threads),
        )

    def counter(self, context: RunContext) -> AbstractContextManager[Callable[[], int]]:
        return redis_counter(with_db(context.direct_redis_url, 1), "DBSIZE")
