"""What a gfcr env's results look like on the OpenEnv wire, both ways.

An OpenEnv observation is `{"observation": {...}, "reward": r, "done": d, "metadata": {...}}`.
gfcr puts its text in `observation["text"]` and everything else it knows in `metadata`, flat,
so a generic client reads `metadata["signals"]` or `metadata["tools"]` directly:

- `env_id`, `task_id`, `episode_id`, `terminated`, `truncated` (OpenEnv has one `done`;
  gfcr keeps both);
- the env's `info`, made JSON: `task` (a `Task` as a dict), `messages` (their images inline, as
  OpenAI `image_url` parts holding `data:` URLs), `tools`, `signals`, `turn`, `state`, and any
  other key (values JSON cannot hold are sent as text);
- `error` when a reset failed: the gfcr error's class name and message, so the client raises
  the same error (`UnknownNameError` with its "did you mean").

A task's gold data is what its verifier compares against (the answer, the gold SQL, hidden
tests), and its metadata may hold more of it (a generator's entry, a simulated user's script), so
an agent must never read them: unless a server is started to send them (`--send-gold`, for
trusted trainer-side clients), it sends `withhold_gold(task)`, and grading stays on the server.

An env whose observations are `text_and_image` (`{"text", "image"}`) sends the image's pixels in
`observation["image"]` as a PNG `data:` URL (lossless: `decode_pixels` gives back the same
array), and says so in `GET /gfcr` (`image_shape`), so the client rebuilds the same space.

>>> from gfcr.core import Message, Task
>>> info = {"task": Task("t/0", "1+1?", "2"), "messages": [Message("user", "1+1?")], "tools": []}
>>> wire = encode_info(info)
>>> wire["task"]["gold"], wire["messages"]
('2', [{'role': 'user', 'content': '1+1?'}])
>>> decode_info(wire) == info
True
>>> withhold_gold(Task("t/0", "1+1?", "2", metadata={"level": 1}))
Task(id='t/0', prompt='1+1?', gold=None, source='', metadata={'gold_withheld': True})
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium.spaces import Box, Dict, Space

from gfcr import errors
from gfcr.core import Image, Message, Task
from gfcr.errors import ConfigError, DataError

# Keys of `metadata` that are gfcr's step facts, not the env's info.
STEP_KEYS = ("env_id", "task_id", "episode_id", "terminated", "truncated", "error")
GOLD_WITHHELD = "gold_withheld"  # a task's metadata key: its server kept the gold data back
MAX_SEED = 2**63  # seeds fit a signed 64-bit integer (numpy, parquet, torch all hold them)


def jsonable(value: Any) -> Any:
    """`value` as plain JSON data: dataclasses and messages as dicts, tuples as lists, the rest as text.

    >>> jsonable({"a": (1, 2.5, None), "b": {3}, "c": float("nan")})
    {'a': [1, 2.5, None], 'b': [3], 'c': None}
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None  # strict JSON has no NaN or infinity
    if isinstance(value, (Message,)):
        return value.to_dict(inline_images=True)  # the bytes cross the wire with the message
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return jsonable(value.item())
    return str(value)


def encode_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """An env's `info` dict as JSON data (see the module docstring)."""
    return {key: jsonable(value) for key, value in info.items()}


def decode_info(data: Mapping[str, Any]) -> dict[str, Any]:
    """The `info` dict back from its JSON form: `Task` and `Message` objects where they were."""
    info = {key: value for key, value in data.items() if key not in STEP_KEYS}
    if isinstance(info.get("task"), Mapping):
        info["task"] = decode_task(info["task"])
    if isinstance(info.get("messages"), list):
        info["messages"] = [Message.from_dict(m) for m in info["messages"]]
    return info


def image_shape(space: Space) -> tuple[int, int] | None:
    """(height, width) of a `text_and_image` observation space's image; None for a text space.

    >>> from gfcr.envs.spaces import UnicodeText, text_and_image
    >>> image_shape(text_and_image(10, (32, 48))), image_shape(UnicodeText(10))
    ((32, 48), None)
    """
    image = space.spaces.get("image") if isinstance(space, Dict) else None
    if not isinstance(image, Box):
        return None
    height, width, _ = image.shape
    return int(height), int(width)


def encode_pixels(pixels: np.ndarray) -> str:
    """An observation's (H, W, 3) uint8 pixels as a PNG `data:` URL (lossless)."""
    from PIL import Image as PILImage

    return Image.from_pil(PILImage.fromarray(np.asarray(pixels, dtype=np.uint8), "RGB")).data_url()


def decode_pixels(url: str, shape: tuple[int, int]) -> np.ndarray:
    """The (H, W, 3) uint8 pixels of `encode_pixels`' URL; a `DataError` if they are not `shape`.

    >>> pixels = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)
    >>> bool((decode_pixels(encode_pixels(pixels), (2, 4)) == pixels).all())
    True
    """
    pixels = np.array(Image.from_data_url(url).to_pil(), dtype=np.uint8)
    if pixels.shape != (*shape, 3):
        raise DataError(
            f"the server sent an observation image of shape {pixels.shape}, expected {(*shape, 3)}"
        )
    return pixels


def reply_metadata(reply: Mapping[str, Any]) -> dict[str, Any]:
    """A reply's metadata: top-level or in the observation (openenv sends both, or neither if empty).

    >>> reply_metadata({"observation": {"text": "hi", "metadata": {"turn": 1}}, "reward": None})
    {'turn': 1}
    """
    return dict(reply.get("metadata") or (reply.get("observation") or {}).get("metadata") or {})


def decode_task(data: Mapping[str, Any]) -> Task:
    """A `Task` from its JSON form."""
    return Task(
        id=str(data["id"]),
        prompt=str(data.get("prompt", "")),
        gold=data.get("gold"),
        source=str(data.get("source", "")),
        metadata=dict(data.get("metadata") or {}),
    )


def encode_error(error: BaseException) -> dict[str, Any]:
    """A failure as `{"type": class name, "message": text}`; an `EpisodeError` (an infrastructure
    failure such as a queue timeout) adds its `reason`, `detail` and `retryable`."""
    encoded: dict[str, Any] = {"type": type(error).__name__, "message": str(error)}
    if isinstance(error, errors.EpisodeError):
        encoded |= {"reason": error.reason, "detail": error.detail, "retryable": error.retryable}
    return encoded


def decode_error(data: Mapping[str, Any], where: str) -> errors.GfcrError:
    """The gfcr error `data` describes, as the same class where gfcr has it (else a `GfcrError`).

    >>> str(decode_error({"type": "ConfigError", "message": "bad split"}, "http://h:1"))
    'bad split'
    >>> type(decode_error({"type": "ZeroDivisionError", "message": "x"}, "http://h:1")).__name__
    'GfcrError'
    >>> queued = encode_error(errors.QueueTimeoutError("env_server", 5.0, 2))
    >>> decode_error(queued, "http://h:1").reason
    'env_server queue timeout'
    """
    cls = getattr(errors, str(data.get("type")), None)
    message = str(data.get("message", ""))
    if isinstance(cls, type) and issubclass(cls, errors.EpisodeError) and "reason" in data:
        # rebuilt as the base class: what the runner reads (reason, retryable) comes whole
        detail = str(data.get("detail", message))
        retryable = bool(data.get("retryable"))
        return errors.EpisodeError(str(data["reason"]), detail, retryable=retryable)
    if isinstance(cls, type) and issubclass(cls, errors.GfcrError):
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        return error
    return errors.GfcrError(f"the env server at {where} failed: {data.get('type')}: {message}")


def withhold_gold(task: Task) -> Task:
    """`task` as an agent may see it: id, prompt and source; gold and metadata kept back (marked)."""
    return Task(task.id, task.prompt, None, task.source, {GOLD_WITHHELD: True})


def require_gold(task: Task) -> Task:
    """`task`, or a `ConfigError` saying how to get its gold data when its server withheld it.

    >>> require_gold(withhold_gold(Task("t/0", "1+1?", "2")))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: task 't/0' came from an env server that withholds gold data ...
    """
    if task.metadata.get(GOLD_WITHHELD):
        raise ConfigError(
            f"task {task.id!r} came from an env server that withholds gold data (answers, gold SQL, "
            "tests), which the scripted oracle plays from: start the server with "
            "`gfcr serve-env ... --send-gold` (for trusted trainer-side clients only)"
        )
    return task


def reset_arguments(
    seed: Any = None, task_id: Any = None, options: Any = None
) -> tuple[int | None, str | None]:
    """A reset's `(seed, task_id)` checked as they come off the wire; a `ConfigError` names a bad one.

    `task_id` may also come in Gymnasium's `options={"task_id": ...}`.

    >>> reset_arguments(3, options={"task_id": "math/1"})
    (3, 'math/1')
    >>> reset_arguments(float("inf"))
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: seed must be an integer in [0, 2**63), got inf (float)
    """
    if seed is not None and (type(seed) is not int or not 0 <= seed < MAX_SEED):
        kind = type(seed).__name__
        raise ConfigError(f"seed must be an integer in [0, 2**63), got {_short(seed)} ({kind})")
    if options is not None:
        if not isinstance(options, Mapping) or set(options) - {"task_id"}:
            raise ConfigError(f"reset options must be {{'task_id': ID}} or null, got {_short(options)}")
        if task_id is not None and options.get("task_id") not in (None, task_id):
            raise ConfigError(f"two task ids: task_id={task_id!r} and options.task_id={options['task_id']!r}")
        task_id = options.get("task_id", task_id) if task_id is None else task_id
    if task_id is not None and not isinstance(task_id, str):
        raise ConfigError(f"task_id must be a string, got {_short(task_id)} ({type(task_id).__name__})")
    return seed, task_id


def _short(value: Any) -> str:
    """`value`'s repr, cut to 80 characters (an int too long to print is given by its size)."""
    if isinstance(value, int) and value.bit_length() > 256:
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:80]}..."
