"""Fixtures of the benchmark session: config, one Redis, the session record, progress lines."""

import compileall
import platform
import subprocess
import sys
from collections.abc import Callable, Iterator
from importlib import metadata
from pathlib import Path

import psutil
import pytest
import redis

from tests.servers.redis_server import redis_process

from .harness.config import BenchConfig, load_config
from .harness.postgres_server import postgres_url
from .harness.progress import ProgressLine
from .harness.redis_stats import server_version
from .harness.report import Session, render, write_json
from .peers import PEERS, Peer, RunContext
from .peers.threadmill import BASELINE_DIR

SESSION_KEY = pytest.StashKey[Session]()
REPO_DIR = Path(__file__).resolve().parents[1]
CHART_DIR = REPO_DIR / "docs" / "images"
# The checkout's packages, which run from source; installed peers were compiled by pip.
SOURCE_PACKAGES = ("django_threadmill", "testproject", "benchmarks")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SESSION_KEY] = Session(mode=load_config().mode)
    # Workers start from bytecode, as an installed package does: under PYTHONDONTWRITEBYTECODE
    # (set in some sandboxes and containers) every worker would compile these modules anew.
    checkouts = [REPO_DIR, *([Path(BASELINE_DIR)] if BASELINE_DIR else [])]
    for checkout in checkouts:
        for package in SOURCE_PACKAGES:
            compileall.compile_dir(checkout / package, quiet=1)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every benchmark is also a smoke test: THREADMILL_BENCH=smoke makes it tiny."""
    for item in items:
        item.add_marker(pytest.mark.smoke)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    session = terminalreporter.config.stash[SESSION_KEY]
    if not session.drains and not session.latencies and not session.bursts:
        return
    terminalreporter.write_line(render(session))
    path = write_json(session)
    terminalreporter.write_line(f"\nJSON: {path}")
    # Only a run of every benchmark draws the charts: a -k subset would draw a partial one.
    if session.mode == "full" and not terminalreporter.stats.get("deselected"):
        from .harness.chart import write_charts

        for chart in write_charts(session, CHART_DIR):
            terminalreporter.write_line(f"Chart: {chart}")


@pytest.fixture(scope="session")
def bench_config() -> BenchConfig:
    return load_config()


@pytest.fixture(scope="session")
def redis_url(session_record: Session) -> Iterator[str]:
    """One throwaway redis-server for the session; every run starts with FLUSHALL."""
    with redis_process("--appendonly", "no") as server:
        with redis.Redis.from_url(server.url) as client:
            session_record.environment["redis"] = server_version(client)
        yield server.url


@pytest.fixture(scope="session")
def database_url() -> Iterator[str]:
    """A PostgreSQL server for the peers that need one, started on first use."""
    with postgres_url() as url:
        yield url


@pytest.fixture
def run_context(
    request: pytest.FixtureRequest, redis_url: str, tmp_path: Path
) -> Callable[[Peer], RunContext]:
    """Build the RunContext of a peer, skipping it when it cannot run here."""

    def build(peer: Peer) -> RunContext:
        if reason := peer.missing():
            pytest.skip(reason)
        database = request.getfixturevalue("database_url") if peer.needs_postgres else None
        return RunContext(
            redis_url=redis_url, direct_redis_url=redis_url, workdir=tmp_path, database_url=database
        )

    return build


@pytest.fixture(scope="session")
def session_record(pytestconfig: pytest.Config) -> Session:
    session = pytestconfig.stash[SESSION_KEY]
    session.environment.update(environment())
    for peer in PEERS:
        if reason := peer.missing():
            session.skipped[peer.name] = reason
    return session


def environment() -> dict[str, str]:
    """The machine and the versions a reader needs to weigh the figures."""
    # A dict keeps the table's order and lists a distribution run twice (SQLite, PostgreSQL) once.
    versions = {f"{p.distribution} {p.version()}": None for p in PEERS if p.missing() is None}
    return {
        "commit": git_commit(),
        "machine": f"{platform.processor() or platform.machine()}, "
        f"{psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / 2**30:.1f} GiB",
        "cpu": cpu_model(),
        "python": sys.version.split()[0],
        "django": metadata.version("django"),
        "queues": ", ".join(versions),
    }


def git_commit() -> str:
    """The checkout's commit, marked "+changes" when django_threadmill/ has uncommitted edits."""
    repo = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        run = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True)
        return run.stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "django_threadmill") else "")


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


@pytest.fixture(scope="session")
def progress(pytestconfig: pytest.Config) -> ProgressLine:
    return ProgressLine(pytestconfig)
