"""The RSS probe behind --max-memory: the current RSS from /proc, the peak where it is missing."""

import os
import resource
from pathlib import Path

import pytest

from django_threadmill.worker import memory
from django_threadmill.worker.memory import MIB, ResidentMemory


def test_reads_the_current_rss_which_falls_when_memory_is_freed() -> None:
    probe = ResidentMemory()
    try:
        before = probe.read()
        held = os.urandom(64 * MIB)  # written, so every page is resident
        holding = probe.read()
        del held
        after = probe.read()
    finally:
        probe.close()
    assert holding - before >= 60 * MIB
    assert after < holding - 32 * MIB


def test_without_proc_it_reads_the_peak_rss(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(memory, "STATM", str(tmp_path / "no-proc"))
    probe = ResidentMemory()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert probe.read() >= peak_kib * 1024 > 10 * MIB
