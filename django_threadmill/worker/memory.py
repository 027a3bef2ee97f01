"""A process's resident memory (RSS), read cheaply enough to check after every task.

``--max-memory`` recycles a worker process whose RSS passes it. Where there is a /proc, the RSS
is the current one, from ``/proc/self/statm`` through a descriptor kept open: one ``pread``,
about 2 µs. Elsewhere (macOS) ``getrusage`` gives the peak RSS instead, which never falls, so
it errs towards recycling.
"""

import os
import resource
import sys

MIB = 2**20
STATM = "/proc/self/statm"  # "size resident shared ...", in pages


class ResidentMemory:
    """Read the RSS of the process that made this object (make it after a fork, not before)."""

    def __init__(self) -> None:
        try:
            self._statm: int | None = os.open(STATM, os.O_RDONLY)
        except OSError:
            self._statm = None
        self._page_bytes = os.sysconf("SC_PAGE_SIZE")

    def read(self) -> int:
        """Return the resident set size in bytes."""
        if self._statm is not None:
            return int(os.pread(self._statm, 128, 0).split()[1]) * self._page_bytes
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if sys.platform == "darwin" else peak * 1024  # bytes on macOS, else KiB

    def close(self) -> None:
        if self._statm is not None:
            os.close(self._statm)
            self._statm = None
