"""The models a run needs: the rollout policy, the trained model, the reference, weight sync.

- backend "hf": one `transformers` model both generates (as an `HFPolicy`) and trains, so a
  step's update is live for the next rollout with no copy;
- backend "vllm": a vLLM engine generates and a separate transformers model trains on the same
  GPU; `sync_weights` loads the new weights into the engine after every optimizer step.

- backend "served": a `gfcr serve MODEL --allow-weight-updates` in another process (or machine
  sharing the disk) generates, through the runner's `openai:` policy, and a local transformers
  model trains; after every optimizer step the trained weights (with LoRA, the adapter) are
  written to out_dir/weights and pushed to the server (`gfcr.agents.policies.weights`), which
  names each completion's weights (`Completion.policy_version`).

With `[async] max_staleness > 0` the hf backend generates with a copy of the model instead (an
`HFPolicy.replica`), so that rollouts can run while the update changes the trained weights; after
each step the trainable weights (with LoRA, the adapters alone) are pushed into the copy
(`HFPolicy.load_weights`), between two of its batches.

The KL reference (made only when the KL coefficient `beta` > 0) is the model RL starts from: the
initial weights, or the warm-started ones after `[sft]` (`ReferencePolicy.freeze`), as in
DeepSeekMath (§4.1, the reference is the SFT model) and TRL. Only the trainable weights are kept
(with LoRA, the adapters alone) and swapped in for its forward passes.
"""

from __future__ import annotations

import copy
import os
import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
from torch.func import functional_call

from gfcr.core.policy import Policy
from gfcr.errors import ConfigError
from gfcr.trainers.batching import MicroBatch, Pixels, token_logprobs
from gfcr.trainers.config import ModelConfig, TrainConfig


def uses_bf16(model: ModelConfig, device: str) -> bool:
    """Whether training autocasts to bf16: `[model] bf16` on a CUDA device that has it. A CPU without
    bf16 instructions would emulate it, ~45x slower than fp32 (TRL's default autocasts there too).

    >>> uses_bf16(ModelConfig(path="m"), "cpu")
    False
    """
    return model.bf16 and device.startswith("cuda") and torch.cuda.is_bf16_supported()


@dataclass
class Models:
    policy: Policy  # what the runner calls
    model: torch.nn.Module  # what the optimizer updates
    tokenizer: Any
    device: str
    pad_id: int
    reference: ReferencePolicy | None  # the KL reference (beta > 0), or None
    sync: Callable[[int], None]  # after optimizer step n: make the policy generate with the new weights
    autocast: Callable[[], AbstractContextManager]
    # a vision-language model's processor (saved with checkpoints) and its images' pixel tensors
    processor: Any = None
    pixels: Pixels | None = None
    chat: Any = None  # the trained model's chat encoder (`ChatEncoder`): SFT data is tokenized with it


def load_models(config: TrainConfig) -> Models:
    """Load the policy and the trained model as `config.model` and `config.rollout` say."""
    # An absolute path, so that a saved LoRA adapter's `base_model_name_or_path` loads from anywhere.
    path = str(Path(config.model.path).resolve()) if Path(config.model.path).exists() else config.model.path
    backend = config.rollout.backend
    if backend == "vllm":
        local, model, tokenizer, device = _load_vllm(config, path)
    else:
        from gfcr.agents.policies.hf import HFPolicy

        local = HFPolicy(path, device=config.model.device)
        model, tokenizer, device = local.model, local.tokenizer, local.device
        # the configured dtype whatever the checkpoint's: on a GPU HFPolicy keeps a bf16 checkpoint bf16
        model.to(getattr(torch, config.model.dtype))  # type: ignore[arg-type]  # transformers types .to() for devices only
    if config.model.lora_rank > 0:
        model = _with_lora(model, config)
        if backend == "hf":
            local.model = model  # type: ignore[attr-defined]  # generation sees the adapters
    else:
        model.requires_grad_(True)
    policy: Policy = local
    if backend == "served":
        policy = served_policy(config, path)
    elif config.async_.max_staleness > 0 and backend == "hf":
        policy = local.replica(copy.deepcopy(model))  # type: ignore[attr-defined]  # an HFPolicy
        policy.interruptible = config.async_.interrupt_turns  # type: ignore[attr-defined]
    reference = ReferencePolicy(model) if config.loss.beta > 0 else None
    pad_id = getattr(local, "pad_id", None)
    if pad_id is None:
        pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    bf16 = uses_bf16(config.model, device)
    autocast = partial(torch.autocast, "cuda", dtype=torch.bfloat16) if bf16 else nullcontext
    pixels = local.pixel_inputs if getattr(local, "sees_images", False) else None  # type: ignore[attr-defined]
    chat = getattr(local, "chat", None)
    return Models(
        policy,
        model,
        tokenizer,
        device,
        int(pad_id),
        reference,
        _sync(policy, model, config),
        autocast,
        getattr(chat, "processor", None),
        pixels,
        chat,
    )


def served_policy(config: TrainConfig, path: str) -> Policy:
    """The `openai:` policy of `[rollout] server_url`, a `gfcr serve` of the model at `path`: the
    served model's name is asked of the server, and its weights must be that model's (the version
    a fresh server reports is the model folder's fingerprint) or an earlier push's (a number)."""
    import httpx

    from gfcr.agents.policies.hf import model_fingerprint
    from gfcr.agents.policies.openai_api import OpenAIPolicy
    from gfcr.core.policy import version_number

    url = str(config.rollout.server_url).rstrip("/").removesuffix("/v1")
    try:
        name = httpx.get(f"{url}/v1/models", timeout=30).raise_for_status().json()["data"][0]["id"]
        version = httpx.get(f"{url}/v1/weights", timeout=30).raise_for_status().json()["version"]
    except (httpx.HTTPError, KeyError, IndexError, ValueError) as e:
        raise ConfigError(
            f"[rollout] server_url = {url!r}: no gfcr serve answers there ({e}); start one with "
            f"`gfcr serve {path} --allow-weight-updates --port PORT`"
        ) from e
    if version != model_fingerprint(Path(path)) and version_number(version) is None:
        raise ConfigError(
            f"the server at {url} serves weights {version!r}, not those of [model] path = {path!r} "
            f"(fingerprint {model_fingerprint(Path(path))!r}); serve the model the trainer trains: "
            f"`gfcr serve {path} --allow-weight-updates`"
        )
    return OpenAIPolicy(name, f"{url}/v1", concurrency=config.rollout.runner.concurrency)


def _load_vllm(config: TrainConfig, path: str) -> tuple[Policy, torch.nn.Module, Any, str]:
    from transformers import AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer

    from gfcr.agents.policies.vision import is_vision_model
    from gfcr.agents.policies.vllm import VLLMPolicy

    if not torch.cuda.is_available():
        raise ConfigError("rollout backend 'vllm' needs a CUDA GPU; use backend = 'hf' on CPU")
    os.environ.setdefault(
        "VLLM_ENABLE_V1_MULTIPROCESSING", "0"
    )  # in-process engine: weights sync without copies
    options = {"gpu_memory_utilization": 0.3, **config.rollout.vllm_options}
    policy = VLLMPolicy(path, **options)
    device = config.model.device or "cuda"
    dtype = getattr(torch, config.model.dtype)
    loader = AutoModelForImageTextToText if is_vision_model(Path(path)) else AutoModelForCausalLM
    model = loader.from_pretrained(path, dtype=dtype)
    model.to(device)  # type: ignore[arg-type]  # transformers' stubs
    model.eval()  # no dropout: the trained policy is the one that sampled
    return policy, model, AutoTokenizer.from_pretrained(path), device


def _with_lora(model: torch.nn.Module, config: TrainConfig) -> torch.nn.Module:
    try:
        from peft import LoraConfig, get_peft_model
    except ImportError as e:
        raise ConfigError("lora_rank > 0 needs peft: pip install 'gfcr[train]'") from e
    lora = LoraConfig(
        r=config.model.lora_rank,
        lora_alpha=config.model.lora_alpha,
        target_modules=list(config.model.lora_targets),
        lora_dropout=0.0,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, lora)


class ReferencePolicy:
    """The KL reference: the trained model with its trainable weights as they were when frozen.

    Frozen at load (the initial weights), and again by the trainer when the supervised warm start
    ends, so that the KL pulls RL towards the warm-started model, not the one before it. The model
    is never copied: its forward pass runs with the frozen weights swapped in
    (`torch.func.functional_call`); non-trainable weights (a LoRA base) are shared.
    """

    def __init__(self, model: torch.nn.Module) -> None:
        self.model = model
        self.weights: dict[str, torch.Tensor] = {}
        self.freeze()

    def freeze(self) -> None:
        """Take the model's current trainable weights as the reference."""
        self.weights = {}  # the old copy goes first: at most one copy beside the model
        self.weights = {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {name: weight.cpu() for name, weight in self.weights.items()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.weights = {name: state[name].to(w.device, w.dtype) for name, w in self.weights.items()}

    @torch.no_grad()
    def __call__(self, batch: MicroBatch) -> torch.Tensor:
        """The reference's token logprobs of `batch`, (B, L-1)."""

        def forward(**inputs: torch.Tensor) -> Any:
            return functional_call(self.model, self.weights, (), inputs)

        return token_logprobs(forward, batch)


def _sync(policy: Policy, model: torch.nn.Module, config: TrainConfig) -> Callable[[int], None]:
    if config.rollout.backend == "served":
        return _push_to_server(model, config)
    if config.rollout.backend != "vllm" and getattr(policy, "model", None) is not model:

        def push(step: int) -> None:  # the policy generates with a copy: it gets the trained weights
            trained = [(name, p.detach()) for name, p in model.named_parameters() if p.requires_grad]
            policy.load_weights(trained, version=str(step))  # type: ignore[attr-defined]  # an HFPolicy

        return push
    if config.rollout.backend != "vllm":

        def shared(step: int) -> None:  # the policy generates with the trained model itself
            policy.version = str(step)  # type: ignore[misc]

        return shared

    from gfcr.agents.policies.vllm import sync_weights

    def to_engine(step: int) -> None:
        if config.model.lora_rank > 0:  # merge, copy the merged weights, unmerge
            model.merge_adapter()  # type: ignore[operator]
            base = model.get_base_model()  # type: ignore[operator]
            sync_weights(policy, _merged_weights(base), version=str(step))  # type: ignore[arg-type]
            model.unmerge_adapter()  # type: ignore[operator]
        else:
            sync_weights(policy, model.named_parameters(), version=str(step))  # type: ignore[arg-type]

    return to_engine


def _push_to_server(model: torch.nn.Module, config: TrainConfig) -> Callable[[int], None]:
    """The served backend's weight sync: the trained weights (a LoRA adapter, else the trainable
    parameters) written to out_dir/weights/step-N and pushed to the server as version N; only
    the newest stay on disk."""
    from gfcr.agents.policies.weights import push_weights, save_weights

    folder = Path(config.out_dir) / "weights"
    url = str(config.rollout.server_url)

    def push(step: int) -> None:
        name = f"step-{step:06d}"
        push_weights(url, save_weights(model, folder / name), version=str(step))
        for old in folder.iterdir():  # the server has loaded them: the files are no longer needed
            if old.name != name:
                shutil.rmtree(old)

    return push


def _merged_weights(base: torch.nn.Module) -> list[tuple[str, torch.Tensor]]:
    """Base-model weights with LoRA merged in, under the plain model's parameter names."""
    out = []
    for name, tensor in base.state_dict().items():
        if "lora_" in name:
            continue
        out.append((name.replace(".base_layer", ""), tensor))
    return out
