"""The progress line a drain run redraws while it runs."""

import sys

import pytest


class ProgressLine:
    """One line per run, rewritten in place while it runs (pytest's capture is bypassed)."""

    def __init__(self, config: pytest.Config) -> None:
        self.capture = config.pluginmanager.getplugin("capturemanager")
        self.writer = config.get_terminal_writer()
        self.title = ""
        self.last_s = -1.0
        self.live = sys.stdout.isatty()  # redraw in place on a terminal; one line per run in a log

    def start(self, title: str) -> None:
        self.title = title
        self.last_s = -1.0

    def __call__(self, done: int, total: int, seconds: float) -> None:
        finished = done >= total
        if not finished and (not self.live or seconds - self.last_s < 0.5):
            return
        self.last_s = seconds
        rate = done / seconds if seconds else 0.0
        bar = "#" * (20 * done // max(total, 1))
        text = f"  {self.title:<44} [{bar:<20}] {done:>7,}/{total:,} {rate:>9,.0f}/s"
        with self.capture.global_and_fixture_disabled():
            self.writer.write(("\r" if self.live else "\n") + text, flush=True)
