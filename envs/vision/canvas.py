"""`Canvas`: draw in fixed logical units, render at any resolution or any region of the picture.

Every procedural picture of `gfcr/Vision-v0` is drawn on a square of `LOGICAL_SIZE` units. A
canvas maps those units to pixels with a `scale` and an `origin` (the logical point at the
output's top-left corner), so the same drawing code renders the prompt's image (scale
image_size / 256, origin 0) and a zoomed region (a larger scale, the region's corner as origin),
sharp at every size: the zoom tool re-renders rather than upsamples. Pillow clips what falls
outside the output. Text uses Pillow's bundled font (`ImageFont.load_default(size)`), so a picture
is the same on every machine.

>>> canvas = Canvas((64, 64), scale=0.25)
>>> canvas.circle(128, 128, 40, "red")
>>> canvas.image.getpixel((32, 32))
(220, 40, 40)
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

from PIL import Image as PILImage
from PIL import ImageDraw, ImageFont

LOGICAL_SIZE = 256  # the side of every procedural picture, in logical units
COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (220, 40, 40),
    "green": (40, 160, 60),
    "blue": (40, 80, 220),
    "yellow": (235, 200, 30),
    "purple": (140, 60, 180),
    "orange": (245, 130, 20),
    "gray": (128, 128, 128),
    "cyan": (30, 190, 200),
}
SHAPES = ("circle", "square", "triangle", "diamond")
INK = (20, 20, 20)
Point = tuple[float, float]


class Canvas:
    """A `size` (width, height) pixel image showing the logical plane from `origin` at `scale`."""

    def __init__(
        self, size: tuple[int, int], scale: float, origin: Point = (0.0, 0.0), background: str = "white"
    ) -> None:
        self.image = PILImage.new("RGB", size, background)
        self.scale = scale
        self.origin = origin
        self._draw = ImageDraw.Draw(self.image)

    def px(self, x: float, y: float) -> tuple[float, float]:
        """The pixel of logical point (x, y)."""
        return (x - self.origin[0]) * self.scale, (y - self.origin[1]) * self.scale

    def width(self, units: float) -> int:
        """A line width of `units` logical units, at least one pixel."""
        return max(1, round(units * self.scale))

    def polygon(
        self, points: Sequence[Point], fill: str | tuple[int, int, int] | None, outline: bool = False
    ):
        fill = COLOURS.get(fill, fill) if isinstance(fill, str) else fill
        pixels = [self.px(x, y) for x, y in points]
        self._draw.polygon(pixels, fill=fill, outline=INK if outline else None, width=self.width(1.5))

    def circle(self, x: float, y: float, r: float, fill: str) -> None:
        (left, top), (right, bottom) = self.px(x - r, y - r), self.px(x + r, y + r)
        self._draw.ellipse((left, top, right, bottom), fill=COLOURS.get(fill, fill))

    def rectangle(
        self,
        x0: float,
        y0: float,
        x1: float,
        y1: float,
        fill: str | tuple[int, int, int] | None,
        outline=None,
    ) -> None:
        fill = COLOURS.get(fill, fill) if isinstance(fill, str) else fill
        (left, top), (right, bottom) = self.px(x0, y0), self.px(x1, y1)
        self._draw.rectangle((left, top, right, bottom), fill=fill, outline=outline, width=self.width(1))

    def line(
        self, points: Sequence[Point], width: float = 1.5, fill: str | tuple[int, int, int] = INK
    ) -> None:
        fill = COLOURS.get(fill, fill) if isinstance(fill, str) else fill
        self._draw.line([self.px(x, y) for x, y in points], fill=fill, width=self.width(width))

    def text(self, x: float, y: float, text: str, size: float, anchor: str = "mm", fill=INK) -> None:
        """`text` at logical (x, y), `size` logical units high, placed by Pillow's `anchor`."""
        self._draw.text(
            self.px(x, y), text, font=font(max(1, round(size * self.scale))), fill=fill, anchor=anchor
        )

    def shape(self, shape: str, x: float, y: float, r: float, colour: str) -> None:
        """One of `SHAPES`, centred at (x, y) and `r` units from centre to edge (its inscribed circle
        for the square, its circumscribed one for the triangle and diamond)."""
        if shape == "circle":
            self.circle(x, y, r, colour)
        elif shape == "square":
            self.polygon([(x - r, y - r), (x + r, y - r), (x + r, y + r), (x - r, y + r)], colour)
        elif shape == "triangle":
            corners = [
                (x + r * math.cos(a), y - r * math.sin(a))
                for a in (math.pi / 2, 7 * math.pi / 6, 11 * math.pi / 6)
            ]
            self.polygon(corners, colour)
        elif shape == "diamond":
            self.polygon([(x, y - r), (x + r, y), (x, y + r), (x - r, y)], colour)
        else:
            raise ValueError(f"unknown shape {shape!r}; shapes: {SHAPES}")


@functools.lru_cache(maxsize=64)
def font(pixels: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """Pillow's bundled font at `pixels` (the same glyphs on every machine)."""
    return ImageFont.load_default(size=pixels)


def region_canvas(
    size: int, region: tuple[int, int, int, int] | None, max_zoom: float
) -> tuple[Canvas, float]:
    """The canvas of a picture `size` pixels square, or of `region` (x, y, w, h in its pixels) re-rendered
    so that its longer side fills `size` pixels (at most `max_zoom` times larger); and that zoom.

    >>> canvas, zoom = region_canvas(256, (0, 0, 64, 32), max_zoom=8)
    >>> canvas.image.size, zoom
    ((256, 128), 4.0)
    """
    base = size / LOGICAL_SIZE
    if region is None:
        return Canvas((size, size), base), 1.0
    x, y, w, h = region
    zoom = zoom_factor(size, w, h, max_zoom)
    out = (max(1, round(w * zoom)), max(1, round(h * zoom)))
    return Canvas(out, base * zoom, (x / base, y / base)), zoom


def zoom_factor(size: int, w: int, h: int, max_zoom: float) -> float:
    """How much larger a w x h region is shown: its longer side fills `size`, within 1 .. max_zoom.

    >>> zoom_factor(256, 64, 32, 8), zoom_factor(256, 8, 8, 8), zoom_factor(256, 300, 10, 8)
    (4.0, 8, 1.0)
    """
    return min(max_zoom, max(1.0, size / max(w, h)))
