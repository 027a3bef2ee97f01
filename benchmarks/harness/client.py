"""The enqueue side of one peer, in a process of its own.

    python -m benchmarks.harness.client PEER CMD N

Commands (each prints one JSON object on stdout):
  bulk N BYTES [MS] [--async]
                     enqueue N echo tasks the peer's fastest way; with MS, tasks that wait MS ms
                     (time.sleep), with --async `async def` ones (asyncio.sleep), then return
                     the value (ours, dramatiq, django-vtasks); {"seconds": ...}
  single N BYTES     enqueue N echo tasks one call at a time; {"latencies_s": [...]}
  pickup N           N stamp tasks one after the other on an idle worker; {"latencies_s": [...]}
"""

import argparse
import importlib
import json
import os
import time
from collections.abc import Callable
from types import ModuleType


def load_client(peer: str) -> ModuleType:
    """Import the peer's client module, after django.setup() for a Django project."""
    from ..peers import peer_named

    if os.environ.get("DJANGO_SETTINGS_MODULE"):
        import django

        django.setup()
    return importlib.import_module(peer_named(peer).client_module)


def wall_time(call: Callable[[], object]) -> float:
    """Return how long ``call()`` took, in seconds."""
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("peer")
    parser.add_argument("command", choices=["bulk", "single", "pickup"])
    parser.add_argument("count", type=int)
    parser.add_argument("payload_bytes", type=int, nargs="?", default=100)
    parser.add_argument("sleep_ms", type=int, nargs="?", default=0)
    parser.add_argument("--async", dest="is_async", action="store_true")
    options = parser.parse_args()
    client = load_client(options.peer)
    value = "x" * options.payload_bytes
    if options.command == "bulk":
        started = time.perf_counter()
        naps = {"sleep_ms": options.sleep_ms, "is_async": options.is_async}
        naps = naps if options.sleep_ms else {}
        client.enqueue_bulk(options.count, value, **naps)
        report: dict[str, object] = {"seconds": time.perf_counter() - started}
    elif options.command == "single":
        one = lambda: client.enqueue_one(value)  # noqa: E731
        report = {"latencies_s": [wall_time(one) for _ in range(options.count)]}
    else:
        report = {"latencies_s": [client.pickup() for _ in range(options.count)]}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
