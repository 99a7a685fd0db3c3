"""Images in the rollout: messages with image parts, JSONL that stores each image once by hash."""

from __future__ import annotations

import json

import numpy as np
import pytest
from PIL import Image as PILImage

from gfcr.core import Image, Message, Step, TokenData, Trajectory, read_jsonl, write_jsonl
from gfcr.core.messages import read_content
from gfcr.errors import ConfigError, DataError


def _image(colour: str, size: tuple[int, int] = (16, 16)) -> Image:
    return Image.from_pil(PILImage.new("RGB", size, colour))


def _episode(image: Image, trajectory_id: str) -> Trajectory:
    prompt = Message("user", ["Which colour?", image])
    trajectory = Trajectory(
        "gfcr/Vision-v0",
        "t",
        "Which colour?",
        [Step("red", "correct", 1.0, True, False)],
        messages=[prompt, Message("assistant", "red")],
        tokens=TokenData([1, 9, 9, 2], [5, 6], [1, 1], [-0.1, -0.2], images=[image]),
        id=trajectory_id,
    )
    return trajectory


def test_a_message_with_images_keeps_its_parts_in_order_and_a_text_only_one_stays_text():
    red, blue = _image("red"), _image("blue")
    message = Message("user", ["left", red, "right", blue])
    assert message.content == ("left", red, "right", blue)
    assert message.text == "left\nright" and message.images == (red, blue)
    assert Message("user", ["a", "b"]).content == "a\nb"  # no image: plain text, as before
    openai = message.to_openai()["content"]
    assert [p["type"] for p in openai] == ["text", "image_url", "text", "image_url"]
    assert Image.from_data_url(openai[1]["image_url"]["url"]) == red
    assert Message.from_dict(message.to_openai()) == message  # an OpenAI message reads back
    with pytest.raises(ConfigError, match="gfcr.core.Image"):
        Message("user", ["text", np.zeros((2, 2, 3))])  # type: ignore[list-item]


def test_jsonl_stores_each_image_once_beside_the_file_and_reads_it_back(tmp_path):
    red = _image("red", (64, 64))
    path = tmp_path / "run.jsonl"
    write_jsonl([_episode(red, "a"), _episode(red, "b")], path)
    stored = list((tmp_path / "images").iterdir())
    assert [p.name for p in stored] == [f"{red.sha256}.png"]  # two episodes, one file
    line = path.read_text().splitlines()[0]
    assert red.sha256 in line and "base64" not in line  # referenced, not inlined
    back = list(read_jsonl(path))
    assert back == [_episode(red, "a"), _episode(red, "b")]
    assert back[0].messages[0].images[0].to_pil().getpixel((0, 0)) == (255, 0, 0)
    assert back[0].tokens is not None and back[0].tokens.images == [red]
    text_only = Trajectory("e", "t", "x", tokens=TokenData([1], [2], [1], [0.0]))
    assert "images" not in json.dumps(text_only.to_dict())  # text lines are as they were


def test_a_reference_to_a_missing_image_is_a_clear_error_not_a_silent_gap(tmp_path):
    red = _image("red")
    path = tmp_path / "run.jsonl"
    write_jsonl([_episode(red, "a")], path)
    (tmp_path / "images" / f"{red.sha256}.png").unlink()
    trajectory = next(read_jsonl(path))  # reading is lazy: the line loads
    with pytest.raises(DataError, match="images/ folder"):
        trajectory.messages[0].images[0].to_pil()
    with pytest.raises(DataError, match="read_jsonl"):
        read_content([{"type": "image", "sha256": red.sha256}])  # no store given
    with pytest.raises(DataError, match="data URL"):
        Image.from_data_url("https://example.com/cat.png")  # nothing is fetched from the network
    with pytest.raises(DataError, match="not an image"):
        Image.from_bytes(b"<html>not an image</html>")


def test_writers_in_many_threads_store_one_whole_image(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from gfcr.core import ImageStore

    image = _image("purple", (256, 256))
    store = ImageStore(tmp_path / "images")
    for _ in range(5):  # each round races 16 writers of one picture that is not stored yet
        for stored in store.root.glob("*"):
            stored.unlink()
        with ThreadPoolExecutor(16) as pool:
            assert set(pool.map(lambda _: store.put(image), range(16))) == {image.sha256}
        assert [p.name for p in store.root.iterdir()] == [f"{image.sha256}.png"]
        assert store.read(image.sha256) == image.data
