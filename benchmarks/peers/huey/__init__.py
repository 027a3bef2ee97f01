"""huey: RedisHuey with results on, thread workers, `huey_consumer`."""

from collections.abc import Callable
from contextlib import AbstractContextManager

from ..base import Peer, RunContext, WorkerSpec, redis_counter

HUEY_NAME = "bench"


class HueyPeer(Peer):
    name = "huey"
    label = "huey"
    distribution = "huey"
    module = "huey"
    read_ahead = "none (one task per dequeue, as shipped)"
    poll_commands = ("hlen",)

    def worker_argv(self, spec: WorkerSpec) -> list[str]:
        return self.python(
            "-m",
            "huey.bin.huey_consumer",
            "benchmarks.peers.huey.tasks.huey",
            "--workers",
            str(spec.threads),
            "--worker-type",
            "thread",
            "--no-periodic",
            "--quiet",
        )

    def counter(self, context: RunContext) -> AbstractContextManager[Callable[[], int]]:
        return redis_counter(context.direct_redis_url, "HLEN", f"huey.results.{HUEY_NAME}")
