"""How many CPUs this process may use: the default of ``threadmill_worker --processes``.

``os.cpu_count()`` counts the host's CPUs. A process pinned to some of them (``taskset``, a
cpuset) or in a container with a CPU quota (``docker --cpus 2``, a Kubernetes CPU limit) gets
fewer: a worker sized by the host's count on a 64-core host then started 64 processes for two
CPUs' worth of time. The quota is read from the cgroup files (v2 ``cpu.max``; v1
``cpu.cfs_quota_us`` over ``cpu.cfs_period_us``) of the process's own cgroup and each of its
parents, the tightest winning. A file that is missing, unreadable or garbled counts as no quota.
Each version's files are read in its own tree: the v2 tree is the mount itself, or ``unified/``
under it in systemd's "hybrid" layout, where the v1 controllers have folders at the mount.
"""

import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
OWN_CGROUPS = Path("/proc/self/cgroup")  # "hierarchy:controllers:path" lines, one per hierarchy
type QuotaReader = Callable[[Path], float | None]  # one cgroup folder's quota in CPUs


def default_processes(cgroup_root: Path = CGROUP_ROOT, own_cgroups: Path = OWN_CGROUPS) -> int:
    """Return the CPUs this process may run on, capped by its cgroup's CPU quota; at least 1."""
    usable = usable_cpus()
    quota = cgroup_cpu_quota(cgroup_root, own_cgroups)
    return max(1, usable if quota is None else min(usable, quota))


def usable_cpus() -> int:
    """Return the CPUs this process may run on (its affinity), else the host's count."""
    process_cpu_count = getattr(os, "process_cpu_count", None)  # 3.13+: also PYTHON_CPU_COUNT
    if process_cpu_count is not None:
        return int(process_cpu_count() or 1)
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity on macOS
        return os.cpu_count() or 1


def process_cpu_share(
    processes: int, cgroup_root: Path = CGROUP_ROOT, own_cgroups: Path = OWN_CGROUPS
) -> float:
    """Return the CPU, in cores, each of ``processes`` worker processes can get, at most one
    (the GIL): the CPUs their affinity and cgroup quota allow, shared between them. A 1.5-CPU
    quota starts 2 processes, each getting 0.75 of a core at most: the elastic pool measured
    against a whole core never saw their CPU-bound tasks (docs/worker.md, The elastic pool)."""
    usable: float = usable_cpus()
    quota = _tightest_quota(cgroup_root, own_cgroups)
    if quota is not None:
        usable = min(usable, quota)
    return min(1.0, usable / max(1, processes))


def cgroup_cpu_quota(cgroup_root: Path, own_cgroups: Path) -> int | None:
    """Return the tightest CPU quota of this process's cgroups, in whole CPUs rounded up (1.5
    CPUs of time keep 2 processes busy); None when none is set or none can be read."""
    quota = _tightest_quota(cgroup_root, own_cgroups)
    return None if quota is None else max(1, math.ceil(quota))


def _tightest_quota(cgroup_root: Path, own_cgroups: Path) -> float | None:
    """Return the tightest CPU quota of this process's cgroups, in CPUs; None when none is set
    or none can be read."""
    quotas = (
        quota
        for folder, read in _cgroup_folders(cgroup_root, own_cgroups)
        if (quota := read(folder)) is not None
    )
    return min(quotas, default=None)


def _cgroup_folders(cgroup_root: Path, own_cgroups: Path) -> Iterator[tuple[Path, QuotaReader]]:
    """Yield the folders of this process's CPU cgroups and their parents, up to each mount,
    each with the reader of its cgroup version's files.

    In a container with its own cgroup namespace the path is ``/`` and the mount is the
    container's cgroup; without one the path may name a folder the container cannot see, and
    the walk up reaches the mount, which is the container's cgroup there.
    """
    try:
        lines = own_cgroups.read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        lines = ["0::/", "1:cpu:/", "2:cpu,cpuacct:/"]
    for line in lines:
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        read: QuotaReader
        if hierarchy == "0" and not controllers:  # cgroup v2: one tree
            mount, read = _v2_mount(cgroup_root), _v2_quota
        elif "cpu" in controllers.split(","):  # cgroup v1: the cpu controller's own tree
            mount, read = cgroup_root / controllers, _v1_quota
        else:
            continue
        relative = Path(path.strip().lstrip("/"))
        folder = mount if ".." in relative.parts else mount / relative  # outside the namespace
        for each in (folder, *(up for up in folder.parents if up.is_relative_to(mount))):
            yield each, read


def _v2_mount(cgroup_root: Path) -> Path:
    """Return where the v2 tree is: ``unified/`` under the mount in the hybrid layout (a v2
    tree there holds ``cgroup.controllers``), else the mount itself."""
    unified = cgroup_root / "unified"
    return unified if os.path.exists(unified / "cgroup.controllers") else cgroup_root


def _v2_quota(folder: Path) -> float | None:
    """Read ``cpu.max`` ("quota period", or "max period" for no quota)."""
    try:
        quota, period = (folder / "cpu.max").read_text().split()
        return _cpus(int(quota), int(period))
    except (OSError, UnicodeDecodeError, ValueError):  # missing, or "max": no quota
        return None


def _v1_quota(folder: Path) -> float | None:
    """Read ``cpu.cfs_quota_us`` (-1 for no quota) over ``cpu.cfs_period_us``."""
    try:
        quota = int((folder / "cpu.cfs_quota_us").read_text())
        period = int((folder / "cpu.cfs_period_us").read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return _cpus(quota, period)


def _cpus(quota: int, period: int) -> float | None:
    """Return ``quota / period``, the CPUs' worth of time the cgroup gets; None for none set."""
    if quota <= 0 or period <= 0:
        return None
    return quota / period
