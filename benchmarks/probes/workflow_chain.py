"""Measure what a chain's step costs as the chain grows (milliseconds per step).

Run ``python -m benchmarks.probes.workflow_chain [--steps 100 400 1600]`` from the repository
root. It uses ``REDIS_URL`` or starts a throwaway redis-server, then for each length enqueues a
chain of that many ``echo`` steps (each step's value is the next one's argument) and runs it
with ``django_threadmill.testing.drain`` in this thread: every step's advance and enqueue, and
the step itself. A cost that does not grow with the chain reads the same per step at every
length. Keys are deleted afterwards.
"""

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from benchmarks.probes.project import probe_project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 400, 1600])
    args = parser.parse_args()

    with probe_project("chainbench"):
        from django_threadmill.testing import drain, flush
        from django_threadmill.workflows import chain, step
        from testproject.example.tasks import echo

        for steps in args.steps:
            flush()
            flow = chain(step(echo, "x" * 50), *(step(echo) for _ in range(steps - 1))).enqueue()
            started = time.perf_counter()
            ran = drain()
            seconds = time.perf_counter() - started
            flow.refresh()
            print(
                f"steps={steps} ran={ran} status={flow.status} {seconds:.2f} s "
                f"{seconds / steps * 1000:.2f} ms/step"
            )


if __name__ == "__main__":
    main()
