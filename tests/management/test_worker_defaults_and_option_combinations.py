"""threadmill_worker's default process count follows the CPUs the worker may use, and options
that would do nothing without another are refused instead of ignored.

``--processes`` defaulted to the host's CPU count: in a container limited to 2 CPUs on a 64-core
host a worker started 64 processes. ``--target-wait`` and ``--thread-idle`` were ignored
without an elastic pool (``--max-threads`` above ``--threads``).
"""

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from django_threadmill.management.commands import threadmill_worker
from django_threadmill.worker.cpus import cgroup_cpu_quota, default_processes, usable_cpus
from django_threadmill.worker.options import (
    DEFAULT_TARGET_WAIT_S,
    DEFAULT_THREAD_IDLE_S,
    WorkerOptions,
)


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[WorkerOptions]:
    """Record the options each worker the command would start gets, and start none."""
    runs: list[WorkerOptions] = []

    class Recorded:
        def __init__(self, options: WorkerOptions, backend: object) -> None:
            runs.append(options)

        def run(self) -> int:
            return 0

    monkeypatch.setattr(threadmill_worker, "Supervisor", Recorded)
    return runs


@pytest.fixture
def one_cpu() -> Iterator[int]:
    """Pin this thread to one CPU (Linux applies affinity per thread), and put it back after."""
    usable = os.sched_getaffinity(0)
    if len(usable) < 2:
        pytest.skip("one usable CPU: pinning to one changes nothing")
    os.sched_setaffinity(0, {min(usable)})
    try:
        yield min(usable)
    finally:
        os.sched_setaffinity(0, usable)


def cgroup_v2(root: Path, cpu_max: str | None, own: str = "0::/\n") -> Path:
    """Lay out a cgroup v2 mount under ``root`` with ``cpu_max`` (None: no file); return the
    file that names the process's own cgroups."""
    root.mkdir(parents=True, exist_ok=True)
    if cpu_max is not None:
        (root / "cpu.max").write_text(cpu_max)
    own_cgroups = root.parent / "self-cgroup"
    own_cgroups.write_text(own)
    return own_cgroups


# --processes: its default


@pytest.mark.parametrize(
    ("cpu_max", "quota"),
    [
        ("200000 100000\n", 2),
        ("150000 100000\n", 2),  # 1.5 CPUs of time keep 2 processes busy
        ("50000 100000\n", 1),
        ("max 100000\n", None),  # no quota
        (None, None),  # no file: no cgroup v2, or the root cgroup
        ("", None),
        ("garbled\n", None),
        ("200000 100000 7\n", None),
        ("200000 0\n", None),
        ("-5 100000\n", None),
    ],
)
def test_a_cgroup_v2_quota_is_read_rounded_up_and_anything_else_is_no_quota(
    tmp_path: Path, cpu_max: str | None, quota: int | None
) -> None:
    own_cgroups = cgroup_v2(tmp_path / "cgroup", cpu_max)
    assert cgroup_cpu_quota(tmp_path / "cgroup", own_cgroups) == quota


@pytest.mark.parametrize(
    ("quota_us", "period_us", "quota"),
    [("300000\n", "100000\n", 3), ("-1\n", "100000\n", None), ("x", "100000", None)],
)
def test_a_cgroup_v1_quota_is_read_from_the_cpu_controllers_tree(
    tmp_path: Path, quota_us: str, period_us: str, quota: int | None
) -> None:
    cpu = tmp_path / "cgroup" / "cpu,cpuacct" / "docker" / "abc"
    cpu.mkdir(parents=True)
    (cpu / "cpu.cfs_quota_us").write_text(quota_us)
    (cpu / "cpu.cfs_period_us").write_text(period_us)
    own_cgroups = tmp_path / "self-cgroup"
    own_cgroups.write_text("4:memory:/docker/abc\n2:cpu,cpuacct:/docker/abc\n0::/\n")
    assert cgroup_cpu_quota(tmp_path / "cgroup", own_cgroups) == quota


def test_the_tightest_quota_of_the_cgroup_and_its_parents_wins(tmp_path: Path) -> None:
    """systemd's CPUQuota= on a slice holds every service in it."""
    root = tmp_path / "cgroup"
    own_cgroups = cgroup_v2(root, None, own="0::/workers.slice/app.service\n")
    (root / "workers.slice" / "app.service").mkdir(parents=True)
    (root / "workers.slice" / "cpu.max").write_text("300000 100000\n")
    (root / "workers.slice" / "app.service" / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_quota(root, own_cgroups) == 3


@pytest.mark.parametrize(
    "own",
    [
        "0::/docker/abc\n",  # a path the container's own mount does not show
        "0::/../../elsewhere\n",  # outside the cgroup namespace: nothing above the mount
        "not a cgroup line\n0::/\n",
    ],
)
def test_the_mount_itself_counts_where_the_cgroup_path_is_not_under_it(
    tmp_path: Path, own: str
) -> None:
    own_cgroups = cgroup_v2(tmp_path / "cgroup", "200000 100000\n", own=own)
    assert cgroup_cpu_quota(tmp_path / "cgroup", own_cgroups) == 2


@pytest.mark.parametrize(
    ("v1_quota_us", "v2_cpu_max", "quota"),
    [("-1\n", "200000 100000\n", 2), ("300000\n", None, 3), ("-1\n", None, None)],
    ids=["cpu on the v2 tree", "cpu on its v1 tree", "no quota"],
)
def test_a_hybrid_layout_reads_v2_under_unified_and_v1_in_the_controllers_tree(
    tmp_path: Path, v1_quota_us: str, v2_cpu_max: str | None, quota: int | None
) -> None:
    """systemd's "hybrid" layout mounts the v1 controllers in folders at the root and the v2
    tree under ``unified/``. The v2 cgroup's path was looked up at the root, where no cgroup
    is: a quota of the cpu controller on the v2 tree was missed."""
    root = tmp_path / "cgroup"
    (root / "unified" / "app.slice").mkdir(parents=True)
    (root / "unified" / "cgroup.controllers").write_text("cpu memory\n")
    (root / "cpu" / "app.slice").mkdir(parents=True)
    (root / "cpu" / "app.slice" / "cpu.cfs_period_us").write_text("100000\n")
    (root / "cpu" / "app.slice" / "cpu.cfs_quota_us").write_text(v1_quota_us)
    if v2_cpu_max is not None:
        (root / "unified" / "app.slice" / "cpu.max").write_text(v2_cpu_max)
    own_cgroups = tmp_path / "self-cgroup"
    own_cgroups.write_text("2:name=systemd:/app.slice\n1:cpu:/app.slice\n0::/app.slice\n")
    assert cgroup_cpu_quota(root, own_cgroups) == quota


def test_unreadable_cgroup_files_count_as_no_quota(tmp_path: Path) -> None:
    root = tmp_path / "cgroup"
    (root / "cpu.max").mkdir(parents=True)  # reading it raises IsADirectoryError
    own_cgroups = tmp_path / "self-cgroup"
    own_cgroups.write_bytes(b"\xff\xfe")  # not text: the mount is read alone
    assert cgroup_cpu_quota(root, own_cgroups) is None
    assert cgroup_cpu_quota(tmp_path / "missing", tmp_path / "missing-too") is None
    assert default_processes(root, own_cgroups) == usable_cpus()


def test_the_default_is_the_smaller_of_the_usable_cpus_and_the_quota(tmp_path: Path) -> None:
    tight = cgroup_v2(tmp_path / "tight", "100000 100000\n")
    assert default_processes(tmp_path / "tight", tight) == 1
    loose = cgroup_v2(tmp_path / "loose", "100000000 100000\n")  # 1,000 CPUs
    assert default_processes(tmp_path / "loose", loose) == usable_cpus()


def test_the_usable_cpus_are_the_affinity_not_the_host_count(one_cpu: int) -> None:
    assert usable_cpus() == 1
    assert (os.cpu_count() or 1) > 1


@pytest.mark.usefixtures("logging_put_back", "one_cpu")
def test_a_worker_pinned_to_one_cpu_starts_one_process(started: list[WorkerOptions]) -> None:
    call_command("threadmill_worker", "--burst")
    assert [options.processes for options in started] == [1]


@pytest.mark.usefixtures("logging_put_back")
def test_processes_given_are_kept(started: list[WorkerOptions]) -> None:
    call_command("threadmill_worker", "--burst", "--processes", "3")
    assert [options.processes for options in started] == [3]


# --target-wait and --thread-idle: only with an elastic pool


def ignored_without_max_threads(flag: str, does: str) -> str:
    return (
        f"{flag} sets {does}, but without --max-threads the pool stays at --threads 1. Give "
        f"--max-threads to let the pool grow, or drop {flag}."
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--target-wait", "0.2"],
            ignored_without_max_threads("--target-wait", "how soon the elastic pool grows"),
        ),
        (
            ["--thread-idle", "5"],
            ignored_without_max_threads("--thread-idle", "how soon the elastic pool shrinks"),
        ),
        (
            ["--threads", "4", "--max-threads", "4", "--thread-idle", "5"],
            "--thread-idle sets how soon the elastic pool shrinks, but --max-threads 4 equal "
            "to --threads 4 keeps the pool fixed. Raise --max-threads above --threads to let "
            "the pool grow, or drop --thread-idle.",
        ),
        (
            ["--max-threads", "4", "--target-wait", "0"],
            "--target-wait must be more than 0 seconds, got 0.",
        ),
        (["--target-wait", "-1"], "--target-wait must be more than 0 seconds, got -1."),
    ],
)
@pytest.mark.usefixtures("logging_put_back")
def test_pool_tuning_without_an_elastic_pool_is_refused_before_anything_starts(
    args: list[str], message: str, started: list[WorkerOptions]
) -> None:
    with pytest.raises(CommandError, match=f"^{re.escape(message)}$"):
        call_command("threadmill_worker", "--processes", "1", *args)
    assert started == []


@pytest.mark.usefixtures("logging_put_back")
def test_pool_tuning_with_an_elastic_pool_is_taken(started: list[WorkerOptions]) -> None:
    call_command(
        "threadmill_worker",
        *("--processes", "1", "--threads", "2", "--max-threads", "8"),
        *("--target-wait", "0.2", "--thread-idle", "5"),
    )
    (options,) = started
    assert (options.max_threads, options.target_wait_s, options.thread_idle_s) == (8, 0.2, 5.0)


@pytest.mark.usefixtures("logging_put_back")
def test_pool_tuning_not_given_keeps_its_defaults(started: list[WorkerOptions]) -> None:
    call_command("threadmill_worker", "--processes", "1")
    call_command("threadmill_worker", "--processes", "1", "--max-threads", "8")
    assert [(options.target_wait_s, options.thread_idle_s) for options in started] == [
        (DEFAULT_TARGET_WAIT_S, DEFAULT_THREAD_IDLE_S)
    ] * 2
