"""django-tasks-redis: RedisTaskBackend (Redis Streams), `manage.py run_redis_tasks`."""

from collections.abc import Callable
from contextlib import AbstractContextManager

from ..base import Peer, RunContext, WorkerSpec, redis_counter

KEY_PREFIX = "django_tasks"  # the backend's default REDIS_KEY_PREFIX


class TasksRedisPeer(Peer):
    name = "tasks_redis"
    label = "django-tasks-redis"
    distribution = "django-tasks-redis"
    module = "django_tasks_redis"
    max_threads = 1
    read_ahead = "none (one message per read, as shipped)"
    slow = True
    poll_commands = ("zcard",)

    def env(self, context: RunContext) -> dict[str, str]:
        return {
            **super().env(context),
            "DJANGO_SETTINGS_MODULE": "benchmarks.peers.tasks_redis.settings",
        }

    def worker_argv(self, spec: WorkerSpec) -> list[str]:
        # Without --continuous it exits once the queue is empty, like our --burst.
        return self.python("-m", "django", "run_redis_tasks")

    def counter(self, context: RunContext) -> AbstractContextManager[Callable[[], int]]:
        index = f"{KEY_PREFIX}:default:status_index:SUCCESSFUL"
        return redis_counter(context.direct_redis_url, "ZCARD", index)
