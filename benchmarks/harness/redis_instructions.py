"""Count the instructions a redis-server executes, under valgrind's callgrind.

CPU seconds from INFO move by 30% between runs on a shared VM; instruction counts do not depend
on the machine's load, so a change to a Lua script shows as a clean before/after figure. The
server runs about 50 times slower under valgrind: use a few thousand tasks.
"""

import re
import shutil
import subprocess
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from tests.servers.redis_server import RedisProcess, started

_TOTAL = re.compile(r"^(?:summary|totals): (\d+)", re.MULTILINE)


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(
            f"--instructions needs {name} on PATH: install valgrind (apt-get install valgrind)."
        )
    return found


class CallgrindRedis(RedisProcess):
    """A throwaway redis-server under callgrind, whose counters can be zeroed and read."""

    def arguments(self) -> list[str]:
        return [
            _tool("valgrind"),
            "--tool=callgrind",
            f"--callgrind-out-file={self.directory / 'callgrind.out'}",
            *super().arguments(),
        ]

    def _control(self, *args: str) -> None:
        assert self.process is not None, "the server is not running"
        subprocess.run(
            [_tool("callgrind_control"), *args, str(self.process.pid)],
            check=True,
            capture_output=True,
        )

    def count(self, work: Callable[[], None]) -> int:
        """Run ``work`` and return the instructions the server executed meanwhile."""
        self._control("--zero")
        work()
        self._control("--dump")
        dumps = sorted(self.directory.glob("callgrind.out.*"), key=lambda p: p.stat().st_mtime)
        text = dumps[-1].read_text()
        for dump in dumps:
            dump.unlink()
        total = _TOTAL.search(text)
        if total is None:
            raise RuntimeError(f"No instruction total in the callgrind dump {dumps[-1]}.")
        return int(total[1])


def callgrind_redis(*extra_args: str) -> AbstractContextManager[CallgrindRedis]:
    """Run a throwaway redis-server under callgrind for the duration of the block."""
    _tool("valgrind")
    return started(lambda directory: CallgrindRedis(Path(directory), *extra_args))
