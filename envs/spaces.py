"""`UnicodeText`: a Gymnasium `Text` space for any Unicode string up to a length.

Gymnasium's `Text` only holds characters from a fixed charset (alphanumeric by default), but
LLM text holds anything. `UnicodeText` accepts every `str` within its length bounds, samples
from a varied charset (ASCII, markup, accents, CJK, maths, emoji, whitespace) so that random
actions exercise parsers, and stores strings as code points in shared memory so that
`gymnasium.make_vec(..., vectorization_mode="async")` carries them between processes intact.

Gymnasium reads an async vector env's shared memory once, at construction, and relies on the
result being a live view (true of NumPy arrays, not of the tuple of strings it builds for
`Text`). So for `UnicodeText` the read returns `SharedTexts`, a live sequence that decodes on
access; the vector env's copy of it (`copy=True`, the default) is a plain tuple of `str`.
"""

from __future__ import annotations

import multiprocessing as mp
import string
from collections.abc import Sequence
from types import ModuleType
from typing import Any, cast

import numpy as np
from gymnasium.spaces import Box, Dict, Space, Text
from gymnasium.vector.utils import shared_memory

from gfcr.core.images import Image

_SAMPLE_CHARSET = string.printable + "éßøñ中文日本語한국어∑∫√π≤≥→αβγ😀🚀{}[]<>\\$"
_PAD = -1  # code-point slot after the end of a string in shared memory


class UnicodeText(Text):
    """Any Unicode string with `min_length <= len(s) <= max_length`.

    >>> space = UnicodeText(max_length=10)
    >>> space.contains("héllo 世界"), space.contains("x" * 11), space.contains(b"bytes")
    (True, False, False)
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None) -> None:
        super().__init__(max_length, min_length=min_length, charset=_SAMPLE_CHARSET, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"UnicodeText({self.min_length}, {self.max_length})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, UnicodeText)
            and self.min_length == other.min_length
            and self.max_length == other.max_length
        )

    __hash__ = Text.__hash__


@shared_memory.create_shared_memory.register(UnicodeText)
def _create(space: UnicodeText, n: int = 1, ctx: ModuleType = mp) -> Any:
    return ctx.Array(np.dtype(np.int32).char, n * space.max_length)


class SharedTexts(Sequence[str]):
    """A live view of `n` strings stored as code points in shared memory."""

    def __init__(self, rows: np.ndarray) -> None:
        self._rows = rows  # (n, max_length) int32 view of the shared buffer

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self))))
        row = self._rows[index]
        return "".join(map(chr, row[row != _PAD].tolist()))

    def __deepcopy__(self, memo: dict) -> tuple[str, ...]:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedTexts({tuple(self)!r})"


@shared_memory.read_from_shared_memory.register(UnicodeText)
def _read(space: UnicodeText, memory: Any, n: int = 1) -> SharedTexts:
    return SharedTexts(np.frombuffer(memory.get_obj(), dtype=np.int32).reshape((n, space.max_length)))


@shared_memory.write_to_shared_memory.register(UnicodeText)
def _write(space: UnicodeText, index: int, value: str, memory: Any) -> None:
    size = space.max_length
    destination = np.frombuffer(memory.get_obj(), dtype=np.int32)[index * size : (index + 1) * size]
    codes = np.frombuffer(value.encode("utf-32-le"), dtype=np.int32)
    destination[: len(codes)] = codes
    destination[len(codes) :] = _PAD


def text_and_image(max_length: int, image_shape: tuple[int, int]) -> Dict:
    """The observation space of an env that shows images: `{"text": str, "image": (H, W, 3) uint8}`.

    `text` is what a text env's observation is; `image` the latest image the env showed, as RGB
    pixels of a fixed `image_shape` (height, width), all zeros on a step that showed none. The
    images themselves, at their own sizes, travel as parts of `info["messages"]` (the policy's
    input); this space is what Gymnasium tools see (`check_env`, `make_vec`, wrappers).

    >>> space = text_and_image(100, (32, 48))
    >>> space.contains({"text": "a red square", "image": np.zeros((32, 48, 3), np.uint8)})
    True
    """
    return Dict({"text": UnicodeText(max_length), "image": Box(0, 255, (*image_shape, 3), np.uint8)})


def observation_text(observation: Any) -> str:
    """The text of an observation: a text env's own, or a `text_and_image` observation's `text`.

    >>> observation_text("3 rows"), observation_text({"text": "a chart", "image": None})
    ('3 rows', 'a chart')
    """
    return str(observation["text"] if isinstance(observation, dict) else observation)


def observation_for(space: Space, text: str, images: Sequence[Image]) -> str | dict[str, Any]:
    """What an env whose observation space is `space` returns for a step that showed `text` and `images`.

    In a text space, the text alone. In a `text_and_image` space, the text and the last image's
    RGB pixels at the space's size (resized if the image has another), zeros if there is none.

    >>> from PIL import Image as PILImage
    >>> red = Image.from_pil(PILImage.new("RGB", (4, 2), "red"))
    >>> observation_for(UnicodeText(10), "a red box", [red])
    'a red box'
    >>> obs = observation_for(text_and_image(10, (2, 4)), "a red box", [red])
    >>> obs["text"], obs["image"].shape, obs["image"][0, 0].tolist()
    ('a red box', (2, 4, 3), [255, 0, 0])
    >>> int(observation_for(text_and_image(10, (2, 4)), "none", [])["image"].max())
    0
    """
    if not isinstance(space, Dict):
        return text
    height, width, _ = cast(Box, space["image"]).shape
    if not images:
        return {"text": text, "image": np.zeros((height, width, 3), np.uint8)}
    picture = images[-1].to_pil()
    if picture.size != (width, height):
        picture = picture.resize((width, height))
    return {"text": text, "image": np.array(picture, dtype=np.uint8)}


__all__ = ["UnicodeText", "observation_for", "observation_text", "text_and_image"]
