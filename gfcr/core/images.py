"""Images in a rollout: `Image` (encoded bytes named by their content hash) and `ImageStore`.

An image travels as its encoded bytes (PNG, JPEG, WebP, GIF), never as a decoded array, so it is
hashed, compared, sent over the wire and written to disk without loss or re-encoding. Its
`sha256` names it: a trajectory's JSONL line refers to its images by hash, and the bytes are
stored once in an `ImageStore` folder (`images/` beside the JSONL file, see
`gfcr.core.trajectory.write_jsonl`), so an image seen by a whole group of episodes, or in every
turn of one, costs its bytes once.

An image read back from a line is lazy: it knows its hash and the store that holds its bytes, and
reads them on first use, so reading a run of many episodes does not load every screenshot.

>>> from PIL import Image as PILImage
>>> image = Image.from_pil(PILImage.new("RGB", (4, 3), "red"))
>>> image.size, image.media_type, image.data_url()[:22]
((4, 3), 'image/png', 'data:image/png;base64,')
>>> Image.from_data_url(image.data_url()) == image
True
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import os
import re
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gfcr.errors import DataError

MEDIA_TYPES = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp", "gif": "image/gif"}
_SUFFIXES = {media: suffix for suffix, media in MEDIA_TYPES.items()}
_MAGIC = {b"\x89PNG\r\n\x1a\n": "image/png", b"\xff\xd8\xff": "image/jpeg", b"GIF8": "image/gif"}
_DATA_URL = re.compile(r"data:(image/[\w.+-]+);base64,(.*)", re.DOTALL)
_SHA256 = re.compile(r"[0-9a-f]{64}")


class Image:
    """One image: its encoded bytes, their media type, and the SHA-256 of the bytes.

    Build one with `from_pil`, `from_file`, `from_bytes` or `from_data_url`; `to_pil()` decodes
    it. Two images are equal when their bytes are. `Image.stored(sha256, store)` is an image whose
    bytes are read from `store` on first use (as `read_jsonl` gives them back).
    """

    __slots__ = ("_data", "_size", "_store", "media_type", "sha256")

    def __init__(self, data: bytes, media_type: str | None = None) -> None:
        self._data: bytes | None = bytes(data)
        self.media_type = media_type or sniff_media_type(self._data)
        self.sha256 = hashlib.sha256(self._data).hexdigest()
        self._store: ImageStore | None = None
        self._size: tuple[int, int] | None = None

    @classmethod
    def stored(cls, sha256: str, store: ImageStore, media_type: str = "image/png") -> Image:
        """An image whose bytes are in `store` under `sha256`, read when first needed."""
        if not _SHA256.fullmatch(sha256):
            raise DataError(f"image reference {sha256!r} is not a SHA-256 digest (64 lowercase hex digits)")
        image = cls.__new__(cls)
        image._data, image.media_type, image.sha256 = None, media_type, sha256
        image._store, image._size = store, None
        return image

    @classmethod
    def from_bytes(cls, data: bytes) -> Image:
        """An image from encoded bytes (PNG, JPEG, WebP or GIF; the type is read from the bytes)."""
        return cls(data)

    @classmethod
    def from_file(cls, path: str | Path) -> Image:
        """The image in the file at `path`, its bytes as they are."""
        try:
            return cls(Path(path).read_bytes())
        except OSError as e:
            raise DataError(f"cannot read image file {str(path)!r}: {e}") from e

    @classmethod
    def from_pil(cls, image: Any, format: str = "PNG") -> Image:
        """A Pillow image, encoded losslessly as PNG (or `format`)."""
        buffer = io.BytesIO()
        image.save(buffer, format=format)
        out = cls(buffer.getvalue(), MEDIA_TYPES.get(format.lower()))
        out._size = tuple(image.size)  # type: ignore[assignment]
        return out

    @classmethod
    def from_data_url(cls, url: str) -> Image:
        """The image of a `data:image/...;base64,...` URL (what OpenAI's `image_url` parts carry)."""
        match = _DATA_URL.fullmatch(url.strip())
        if match is None:
            raise DataError(
                f"image URL {url[:40]!r}... is not a base64 data URL; gfcr reads images inline "
                "(data:image/png;base64,...), it fetches none from the network"
            )
        try:
            return cls(base64.b64decode(match.group(2), validate=True), match.group(1))
        except binascii.Error as e:
            raise DataError(f"image data URL holds invalid base64: {e}") from e

    @property
    def data(self) -> bytes:
        """The encoded bytes (read from the store on first use)."""
        if self._data is None:
            assert self._store is not None  # only `stored` images lack their bytes
            self._data = self._store.read(self.sha256)
            self.media_type = sniff_media_type(self._data)
        return self._data

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        if self._size is None:
            self._size = tuple(self.to_pil().size)  # type: ignore[assignment]
        return self._size  # type: ignore[return-value]

    def to_pil(self) -> Any:
        """The decoded Pillow image, in RGB."""
        from PIL import Image as PILImage

        try:
            image = PILImage.open(io.BytesIO(self.data))
            image.load()
        except OSError as e:
            raise DataError(f"image {self.sha256[:12]} cannot be decoded: {e}") from e
        return image.convert("RGB")

    def data_url(self) -> str:
        """The image as a `data:` URL, for OpenAI-style `image_url` parts."""
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode('ascii')}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Image) and self.sha256 == other.sha256

    def __hash__(self) -> int:
        return hash(self.sha256)

    def __repr__(self) -> str:
        return f"Image({self.media_type}, sha256={self.sha256[:12]})"

    def __reduce__(self) -> tuple:  # pickles with its bytes (process pools, Ray)
        return (Image, (self.data, self.media_type))


def sniff_media_type(data: bytes) -> str:
    """The media type of encoded image bytes, from their first bytes.

    >>> sniff_media_type(b"\\x89PNG\\r\\n\\x1a\\n...")
    'image/png'
    """
    for magic, media in _MAGIC.items():
        if data.startswith(magic):
            return media
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    raise DataError(f"not an image gfcr reads (PNG, JPEG, WebP, GIF): the bytes begin {data[:8]!r}")


class ImageStore:
    """A folder of images named by content hash: `<sha256>.<png|jpeg|webp|gif>`.

    Writing is idempotent and atomic (a temporary file renamed into place), so concurrent writers
    of one run and a killed process never leave a torn image.

    >>> import tempfile
    >>> from PIL import Image as PILImage
    >>> store = ImageStore(tempfile.mkdtemp())
    >>> image = Image.from_pil(PILImage.new("RGB", (2, 2)))
    >>> store.put(image) == image.sha256, store.read(image.sha256) == image.data
    (True, True)
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def path(self, image: Image) -> Path:
        """Where `image` is (or would be) stored: `<root>/<sha256>.<suffix of its media type>`."""
        return self.root / f"{image.sha256}.{_SUFFIXES.get(image.media_type, 'png')}"

    def put(self, image: Image) -> str:
        """Store `image` (once) and return its hash."""
        path = self.path(image)
        if not path.exists():
            self.root.mkdir(parents=True, exist_ok=True)
            temporary = path.with_suffix(f".{uuid.uuid4().hex}.tmp")  # one per writer, threads included
            temporary.write_bytes(image.data)
            os.replace(temporary, path)
        return image.sha256

    def put_all(self, images: Iterable[Image]) -> None:
        for image in images:
            self.put(image)

    def read(self, sha256: str) -> bytes:
        """The bytes stored under `sha256`."""
        for suffix in MEDIA_TYPES:
            path = self.root / f"{sha256}.{suffix}"
            if path.exists():
                return path.read_bytes()
        raise DataError(
            f"image {sha256[:12]}… is not in {self.root}; a trajectory file's images are kept in the "
            "images/ folder beside it: copy that folder with the .jsonl file"
        )
