"""Horizontal stacked bars as inline SVG, the only chart the report draws.

Hand-made rather than from a charting library: one chart type of rectangles
and labels is a few dozen lines, while an SVG charting library adds a
dependency and styles of its own that the page would have to override for
dark mode (and pygal, the obvious one, links its tooltip script from the web
by default).
Colours here are CSS classes, so the page's stylesheet (light, dark, print)
styles the charts as well. Every string is escaped; a bar's label may link
into the page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import List, Optional, Sequence, Tuple

ROW = 22  # px per bar
CHAR = 7.2  # px per character of a 12px label, for the label column's width
MAX_LABEL = 48  # characters shown before a label is cut (the full text is its tooltip)


@dataclass
class Bar:
    label: str
    segments: List[Tuple[str, int, str]] = field(default_factory=list)  # (css class, value, what it is)
    href: Optional[str] = None  # an in-page anchor, "#..."

    @property
    def total(self) -> int:
        return sum(value for _, value, _ in self.segments)


def bars(rows: Sequence[Bar], *, title: str, width: int = 720, scale: Optional[int] = None) -> str:
    """One SVG: a row per bar, label on the left, segments left to right, the total on the right."""
    if not rows:
        return ""
    longest = max(len(_cut(row.label)) for row in rows)
    label_width = int(min(MAX_LABEL, max(6, longest)) * CHAR) + 12
    number_width = 56
    track = max(80, width - label_width - number_width)
    top = max(scale or 0, max(row.total for row in rows), 1)
    height = ROW * len(rows) + 4
    out = [
        # The box scrolls sideways on a phone instead of shrinking the labels to a few pixels.
        f'<div class="chart-box" style="--chart-width: {width}px">'
        f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" '
        f'width="100%" preserveAspectRatio="xMinYMin meet" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
    ]
    for i, row in enumerate(rows):
        y = 2 + i * ROW
        label = _cut(row.label)
        text = (f'<text class="label" x="{label_width - 8}" y="{y + 15}" text-anchor="end">'
                f"<title>{escape(row.label)}</title>{escape(label)}</text>")
        if row.href:
            text = f'<a href="{escape(row.href)}">{text}</a>'
        out.append(text)
        x = float(label_width)
        out.append(f'<rect class="track" x="{label_width}" y="{y + 3}" width="{track}" height="{ROW - 6}" rx="2"/>')
        for css, value, what in row.segments:
            if value <= 0:
                continue
            w = track * value / top
            out.append(f'<rect class="{escape(css)}" x="{x:.1f}" y="{y + 3}" width="{max(w, 1.5):.1f}" '
                       f'height="{ROW - 6}"><title>{escape(what)}: {value}</title></rect>')
            x += w
        out.append(f'<text class="value" x="{label_width + track + 6}" y="{y + 15}">{row.total}</text>')
    out.append("</svg></div>")
    return "".join(out)


def _cut(label: str) -> str:
    """Long paths keep their end, which names the file or directory."""
    return label if len(label) <= MAX_LABEL else "…" + label[-(MAX_LABEL - 1):]
