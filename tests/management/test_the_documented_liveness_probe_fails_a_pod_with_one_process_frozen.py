"""The liveness probe of docs/deploy.md's Kubernetes example fails a pod one of whose processes
no longer renews, while the other does.

A process frozen (SIGSTOP, a task holding the GIL in C code, a deadlock in the interpreter) is
alive to its supervisor, which restarts only a process that exits: the liveness probe is what
must restart its pod. The example's probe asked for one live process of the pod's two, so a
pod with one process frozen passed it for ever, at half its capacity; only the readiness
probe, which restarts nothing, failed.
"""

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import redis

from django_threadmill.backend import ThreadmillTaskBackend
from django_threadmill.management.health import HealthCode
from tests.management.test_health import HOST, probe_at
from tests.support import ROOT, Command, running, wait_until

LEASE_TTL_S = 1.0  # the frozen process's sighting goes stale within a second
DEPLOY = Path(ROOT, "docs", "deploy.md").read_text()


def liveness_args() -> list[str]:
    """Return the options the Kubernetes example's liveness probe gives threadmill_health."""
    found = re.search(r"livenessProbe:\s*exec:\s*command: (\[.*?\])", DEPLOY, re.DOTALL)
    assert found, "docs/deploy.md has no livenessProbe command"
    command: list[str] = json.loads(found[1])
    return command[command.index("threadmill_health") + 1 :]


def example_processes() -> str:
    """Return the --processes the Kubernetes example's worker runs with."""
    found = re.search(r'threadmill_worker",\s*"--processes", "(\d+)"', DEPLOY)
    assert found, "docs/deploy.md's Kubernetes example gives no --processes"
    return found[1]


def silent_for_a_lease(
    backend: ThreadmillTaskBackend, client: redis.Redis, workers_key: str, worker_id: str
) -> bool:
    """Tell whether ``worker_id`` last renewed more than a lease ago on the Redis clock."""
    renewed = client.zscore(workers_key, worker_id)
    return renewed is not None and backend.broker.server_time_ms() - renewed > LEASE_TTL_S * 1000


def test_the_documented_liveness_probe_fails_a_pod_with_one_process_frozen(
    backend: ThreadmillTaskBackend,
    redis_client: redis.Redis,
    redis_url: str,
    key_prefix: str,
    start_worker: Callable[..., Command],
) -> None:
    processes = example_processes()
    assert int(processes) > 1, "the example runs one process: nothing to tell apart"
    liveness = liveness_args()

    def probe() -> int:
        return probe_at(redis_url, key_prefix, *liveness).returncode

    worker = start_worker("--processes", processes, "--queue", "default", lease_ttl_s=LEASE_TTL_S)
    started = r"Worker process started worker_id=(\S+) pid=(\d+)"
    with running(worker, rf"(?s){'.*'.join([started] * int(processes))}"):
        wait_until(lambda: probe() == HealthCode.HEALTHY, "the liveness probe passing")
        frozen_id, frozen_pid = re.findall(started, worker.log)[0]
        assert frozen_id.startswith(f"{HOST}:")
        workers_key = backend.broker.queue_keys("default").workers
        os.kill(int(frozen_pid), signal.SIGSTOP)
        try:
            wait_until(
                lambda: silent_for_a_lease(backend, redis_client, workers_key, frozen_id),
                "the frozen process's last renewal ageing past lease_ttl",
            )
            frozen_pod = probe()
        finally:
            os.kill(int(frozen_pid), signal.SIGCONT)
    assert frozen_pod == HealthCode.TOO_FEW
