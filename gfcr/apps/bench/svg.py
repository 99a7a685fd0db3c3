"""Small inline SVG charts for the bench report (no JavaScript, no plotting library).

>>> svg = bar_chart("pass@1", ["math", "code"], {"oracle": [1.0, 1.0], "random": [0.0, 0.1]})
>>> svg.startswith("<svg") and svg.count("<rect class=\\"bar\\"") == 4
True
>>> svg.count('class="value"')  # every bar is labelled, a bar of height 0 too
4
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from html import escape

PALETTE = ("#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb")
WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 760, 300, 48, 90, 44


def bar_chart(
    title: str,
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    ymax: float = 1.0,
    fmt: str = "{:.2f}",
) -> str:
    """Grouped bars: one group per label in `groups`, one bar per series (e.g. per agent)."""
    plot_w, plot_h = WIDTH - LEFT - 10, HEIGHT - BOTTOM - TOP
    top = max([ymax, *(v for values in series.values() for v in values)]) or 1.0
    group_w = plot_w / max(len(groups), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    parts = _frame(title, top, fmt)
    for g, label in enumerate(groups):
        x0 = LEFT + g * group_w + group_w * 0.1
        for s, (name, values) in enumerate(series.items()):
            value = values[g]
            h = plot_h * value / top
            x, y = x0 + s * bar_w, TOP + plot_h - h
            parts.append(
                f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{bar_w * 0.95:.1f}" height="{h:.1f}" '
                f'fill="{PALETTE[s % len(PALETTE)]}">'
                f"<title>{escape(name)} · {escape(label)}: {fmt.format(value)}</title></rect>"
            )
            # the value above its bar: a bar of height 0 is otherwise indistinguishable from none
            parts.append(
                f'<text class="value" x="{x + bar_w * 0.475:.1f}" y="{y - 3:.1f}" text-anchor="middle">'
                f"{fmt.format(value)}</text>"
            )
        parts.append(_label(LEFT + (g + 0.5) * group_w, HEIGHT - BOTTOM + 14, label))
    parts.append(_legend(list(series)))
    return _svg(parts)


def line_chart(
    title: str,
    xs: Sequence[int],
    series: Mapping[str, Sequence[float]],
    *,
    ymax: float = 1.0,
    dashed: Collection[str] = (),
) -> str:
    """Lines over integer x values (e.g. k), one per series; values may be shorter than `xs`.

    Series named in `dashed` are drawn dashed and thin over the others, solid and wide, so two
    series with equal values (an agent's pass@k and pass^k when it always passes) both show.
    Each point carries a marker with its value as a tooltip.
    """
    plot_w, plot_h = WIDTH - LEFT - 10, HEIGHT - BOTTOM - TOP
    step = plot_w / max(len(xs) - 1, 1)
    parts = _frame(title, ymax, "{:.2f}")
    for i, x in enumerate(xs):
        parts.append(_label(LEFT + i * step, HEIGHT - BOTTOM + 14, f"k={x}"))
    names = list(series)
    for s in sorted(range(len(names)), key=lambda s: names[s] in dashed):  # dashed ones on top
        name, values = names[s], series[names[s]]
        xy = [(LEFT + i * step, TOP + plot_h * (1 - v / ymax)) for i, v in enumerate(values)]
        color = PALETTE[s % len(PALETTE)]
        style = 'stroke-width="2" stroke-dasharray="6 4"' if name in dashed else 'stroke-width="5"'
        parts.append(
            f'<polyline class="line" points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in xy)}" fill="none" '
            f'stroke="{color}" {style}><title>{escape(name)}</title></polyline>'
        )
        radius = 2.5 if name in dashed else 4
        parts += [
            f'<circle class="point" cx="{x:.1f}" cy="{y:.1f}" r="{radius}" fill="{color}">'
            f"<title>{escape(name)} · k={k}: {v:.3f}</title></circle>"
            for (x, y), k, v in zip(xy, xs, values, strict=False)
        ]
    parts.append(_legend(names, dashed))
    return _svg(parts)


def _frame(title: str, top: float, fmt: str) -> list[str]:
    plot_h = HEIGHT - BOTTOM - TOP
    parts = [f'<text x="{LEFT}" y="14" class="title">{escape(title)}</text>']
    for i in range(5):
        y = TOP + plot_h * (1 - i / 4)
        parts.append(f'<line x1="{LEFT}" x2="{WIDTH - 10}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        parts.append(
            f'<text x="{LEFT - 4}" y="{y + 4:.1f}" text-anchor="end" class="tick">'
            f"{fmt.format(top * i / 4)}</text>"
        )
    return parts


def _label(x: float, y: float, text: str) -> str:
    short = text if len(text) <= 26 else text[:25] + "…"
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="end" class="tick" '
        f'transform="rotate(-20 {x:.1f} {y:.1f})">'
        f"{escape(short)}<title>{escape(text)}</title></text>"
    )


def _legend(names: list[str], dashed: Collection[str] = ()) -> str:
    items = []
    for s, name in enumerate(names):
        x, y = LEFT + 180 * (s % 4), 22 + 12 * (s // 4)  # under the title, four to a row
        color = PALETTE[s % len(PALETTE)]
        if name in dashed:
            key = (
                f'<line x1="{x}" x2="{x + 10}" y1="{y + 5}" y2="{y + 5}" stroke="{color}" '
                'stroke-dasharray="3 2"/>'
            )
        else:
            key = f'<rect x="{x}" y="{y}" width="10" height="10" fill="{color}"/>'
        items.append(key + f'<text x="{x + 14}" y="{y + 9}" class="tick">{escape(name[:28])}</text>')
    return "".join(items)


def _svg(parts: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
        f'height="{HEIGHT}" role="img">' + "".join(parts) + "</svg>"
    )
