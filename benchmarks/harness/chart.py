"""Hand-written SVG charts of the main comparison, in a light and a dark variant."""

from dataclasses import dataclass
from datetime import UTC, datetime
from html import escape
from pathlib import Path

from .records import Summary
from .report import Session, reference_for

WIDTH = 820
LABEL_W = 190  # left column: queue names
BAR_AREA_W = 430
BAR_H = 14
ROW_GAP = 14
TOP = 64


@dataclass(frozen=True, slots=True)
class Palette:
    name: str
    background: str
    text: str
    muted: str
    grid: str
    bars: tuple[str, str]  # 1 thread, 4 threads
    ours: tuple[str, str]


LIGHT = Palette(
    "light",
    "#ffffff",
    "#1f2328",
    "#57606a",
    "#d0d7de",
    ("#8c959f", "#57606a"),
    ("#2da44e", "#116329"),
)
DARK = Palette(
    "dark",
    "#0d1117",
    "#e6edf3",
    "#8b949e",
    "#30363d",
    ("#6e7681", "#8b949e"),
    ("#3fb950", "#7ee787"),
)


def text(x: float, y: float, body: str, fill: str, size: int = 12, anchor: str = "start") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" fill="{fill}" font-size="{size}" '
        f'text-anchor="{anchor}">{escape(body)}</text>'
    )


def bar_rows(summaries: list[Summary]) -> list[tuple[str, list[Summary]]]:
    """Main-comparison summaries grouped by queue, in table order."""
    rows: dict[str, list[Summary]] = {}
    for summary in summaries:
        plain = summary.max_threads is None and summary.async_concurrency is None
        if not summary.variant and summary.processes == 1 and plain:
            rows.setdefault(summary.label, []).append(summary)
    return list(rows.items())


def bar(
    summary: Summary, y: float, scale: float, colour: str, palette: Palette, ratio: str
) -> list[str]:
    spread = summary.figures["rate"]
    x0 = LABEL_W
    width = max(1.0, spread.median * scale)
    low, high = x0 + spread.low * scale, x0 + spread.high * scale
    label = f"1x{summary.threads}  {spread.median:,.0f}/s{ratio}"
    return [
        f'<rect x="{x0}" y="{y:.1f}" width="{width:.1f}" height="{BAR_H}" rx="2" fill="{colour}"/>',
        f'<line x1="{low:.1f}" x2="{high:.1f}" y1="{y + BAR_H / 2:.1f}" y2="{y + BAR_H / 2:.1f}" '
        f'stroke="{palette.text}" stroke-width="1"/>',
        text(max(high, x0 + width) + 6, y + BAR_H - 3, label, palette.text, 11),
    ]


def render_svg(session: Session, palette: Palette) -> str:
    summaries = session.summaries()
    rows = bar_rows(summaries)
    top_rate = max((s.figures["rate"].high for _, group in rows for s in group), default=1.0)
    scale = BAR_AREA_W / top_rate
    body: list[str] = []
    y = TOP
    for label, group in rows:
        ours = group[0].peer == "threadmill"
        body.append(text(LABEL_W - 10, y + BAR_H + 2, label, palette.text, 12, "end"))
        for summary in group:
            colour = (palette.ours if ours else palette.bars)[summary.threads > 1]
            reference = reference_for(summary, summaries)
            ratio = ""
            if reference is not None and summary.peer != reference.peer:
                times = summary["rate"] / reference["rate"]
                ratio = f"  ({times:.{1 if times >= 0.1 else 2}f}x dramatiq)"
            body += bar(summary, y, scale, colour, palette, ratio)
            y += BAR_H + 3
        y += ROW_GAP
    footer = footer_lines(session)
    height = y + 18 * len(footer) + 12
    header = [
        text(
            16,
            26,
            "Echo tasks per second, 1 worker process, results stored (not by django-vtasks)",
            palette.text,
            16,
        ),
        text(
            16,
            46,
            "median of the rounds, whisker = min-max; 1x1 = 1 thread, 1x4 = 4 threads",
            palette.muted,
            11,
        ),
    ]
    lines = [text(16, y + 14 + 18 * i, line, palette.muted, 11) for i, line in enumerate(footer)]
    return "\n".join(
        [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height:.0f}" '
            f'viewBox="0 0 {WIDTH} {height:.0f}" font-family="-apple-system, Segoe UI, '
            f'Helvetica, Arial, sans-serif">',
            f'<rect width="100%" height="100%" fill="{palette.background}"/>',
            *header,
            *body,
            f'<line x1="16" x2="{WIDTH - 16}" y1="{y:.1f}" y2="{y:.1f}" stroke="{palette.grid}"/>',
            *lines,
            "</svg>",
            "",
        ]
    )


def footer_lines(session: Session) -> list[str]:
    env = session.environment
    date = datetime.now(UTC).strftime("%Y-%m-%d")
    return [
        f"{date}: {env.get('cpu', '?')} ({env.get('machine', '?')}), Python {env.get('python')}, "
        f"Django {env.get('django')}, Redis {env.get('redis')}, commit {env.get('commit')}",
        str(env.get("queues", "")),
        "django-tasks-db and django-tasks-redis: one thread as shipped (no 1x4 bar), "
        "4,000 tasks; the others 20,000. Method: docs/benchmarks.md",
        "django-vtasks stores no results: its bars count tasks acknowledged.",
    ]


def write_charts(session: Session, directory: Path) -> list[Path]:
    """Write bench-throughput-light.svg and bench-throughput-dark.svg into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for palette in (LIGHT, DARK):
        path = directory / f"bench-throughput-{palette.name}.svg"
        path.write_text(render_svg(session, palette))
        paths.append(path)
    return paths
