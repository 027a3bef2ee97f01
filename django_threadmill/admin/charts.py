"""Draw the per-minute throughput of a queue as SVG geometry, on the server: no JavaScript.

The template turns a ``Chart`` into ``<rect>`` elements; colours come from the admin's CSS
variables (base.html), so the chart follows the light and dark themes.
"""

from dataclasses import dataclass

from django.utils.formats import number_format

CHART_WIDTH = 360  # px of the drawing area; a bar per minute
CHART_HEIGHT = 80  # px of the tallest bar
LABEL_HEIGHT = 14  # px under the bars for the time labels


@dataclass(frozen=True, slots=True, kw_only=True)
class Bar:
    """One minute: successes stacked on failures, with a tooltip."""

    x: float
    width: float
    failed_y: float
    failed_height: float
    ok_y: float
    ok_height: float
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Chart:
    """A bar chart of finished tasks per minute, oldest minute left."""

    width: int
    height: int
    baseline: int
    bars: list[Bar]
    peak: int
    successful: int
    failed: int

    @property
    def failure_percent(self) -> float | None:
        total = self.successful + self.failed
        return 100 * self.failed / total if total else None


def grouped(count: int) -> str:
    """Show a count with the locale's thousands separator, as the tables' ``floatformat:"0g"``."""
    return number_format(count, force_grouping=True)


def throughput_chart(per_minute: list[tuple[int, int]], minutes_ago: list[int]) -> Chart:
    """Return the chart of ``per_minute`` (successful, failed), one pair per minute."""
    peak = max((ok + failed for ok, failed in per_minute), default=0)
    scale = CHART_HEIGHT / peak if peak else 0.0
    step = CHART_WIDTH / max(1, len(per_minute))
    bars = []
    for n, ((ok, failed), ago) in enumerate(zip(per_minute, minutes_ago, strict=True)):
        failed_height, ok_height = failed * scale, ok * scale
        failed_y = CHART_HEIGHT - failed_height
        bars.append(
            Bar(
                x=round(n * step, 2),
                width=round(max(1.0, step - 1), 2),
                failed_y=round(failed_y, 2),
                failed_height=round(failed_height, 2),
                ok_y=round(failed_y - ok_height, 2),
                ok_height=round(ok_height, 2),
                title=f"{ago} min ago: {grouped(ok)} successful, {grouped(failed)} failed",
            )
        )
    return Chart(
        width=CHART_WIDTH,
        height=CHART_HEIGHT + LABEL_HEIGHT,
        baseline=CHART_HEIGHT,
        bars=bars,
        peak=peak,
        successful=sum(ok for ok, _ in per_minute),
        failed=sum(failed for _, failed in per_minute),
    )
