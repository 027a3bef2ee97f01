"""Run the chaos test N times with different seeds and print a table of the figures.

Usage: .venv/bin/python -m tests.chaos.loop [RUNS] [FIRST_SEED]   (THREADMILL_CHAOS=long works)
"""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COLUMNS = (
    "seed",
    "tasks",
    "orphans",
    "kills",
    "redis_restarts",
    "client_kills",
    "executions",
    "duplicates",
    "fenced",
    "successful",
    "failed",
    "queued",
    "lost",
    "problems",
)


def run_once(seed: int, report: Path) -> int:
    env = {**os.environ, "THREADMILL_CHAOS_SEED": str(seed), "THREADMILL_CHAOS_REPORT": str(report)}
    command = [sys.executable, "-m", "pytest", "tests/chaos", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def main() -> int:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    first_seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    with tempfile.NamedTemporaryFile(suffix=".jsonl", delete=False) as handle:
        report = Path(handle.name)
    seeds = [first_seed + n for n in range(runs)]
    codes = {seed: run_once(seed, report) for seed in seeds}
    rows = {row["seed"]: row for row in map(json.loads, report.read_text().splitlines())}
    print("| " + " | ".join(COLUMNS) + " | pytest |")
    print("|" + "---|" * (len(COLUMNS) + 1))
    for seed in seeds:
        row = rows.get(seed, {"seed": seed})
        cells = [str(row.get(column, "-")) for column in COLUMNS]
        print("| " + " | ".join(cells) + f" | {codes[seed]} |")
    passed = sum(code == 0 for code in codes.values())
    print(f"runs={runs} passed={passed} report={report}")
    return 0 if passed == runs else 1


if __name__ == "__main__":
    sys.exit(main())
