"""`vllm:PATH`: vLLM's offline engine (imported only when used), with token ids and logprobs.

Every request of a batch goes to one `LLM.generate` call as token ids (`TokensPrompt`), so the
runner's token-in-token-out prefixes reach the engine unchanged; prefix caching is on, so the
turns of an episode and the samples of a task share their common prefix's KV cache. Logprobs
are vLLM's (of the sampled token, from the raw logits by default); entropies are estimated from
the top `entropy_top_k` logprobs of each position (`gfcr.filter.entropy.topk_entropy`; 0: none).
Needs a GPU.

A vision-language model (its config has a `vision_config`) is rendered by transformers' processor
(`gfcr.agents.policies.vision.VisionChat`), so its ids hold each image's placeholder run as the
trainer's do; each prompt's images go to the engine beside its ids (`multi_modal_data`), and
its prefix cache keys them by content. `limit_mm_per_prompt` defaults to 16 images a prompt.

A batch's generation and a weight push (`sync_weights`) take turns (`weights_lock`), so each
completion comes from one set of weights, named by its `Completion.policy_version`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gfcr.agents.policies.chat import ChatTokens, end_ids, load_chat_encoder
from gfcr.agents.policies.hf import model_fingerprint
from gfcr.agents.policies.vision import VisionChat, is_vision_model
from gfcr.core import Image
from gfcr.core.policy import Completion, Request
from gfcr.errors import PolicyError
from gfcr.filter.entropy import topk_entropy

ENTROPY_TOP_K = 20  # vLLM's default max_logprobs: the most an engine returns unless raised


class VLLMPolicy(ChatTokens):
    """A model served in-process by vLLM; `engine_options` go to `vllm.LLM` (e.g. tensor_parallel_size)."""

    def __init__(
        self, path: str | Path, *, entropy_top_k: int = ENTROPY_TOP_K, **engine_options: Any
    ) -> None:
        try:
            from vllm import LLM
        except ImportError as e:
            raise PolicyError("the vllm: backend needs vLLM and a GPU: pip install 'gfcr[gpu]'") from e
        vision = is_vision_model(Path(path))
        options = {"enable_prefix_caching": True, **engine_options}
        if vision:
            options.setdefault("limit_mm_per_prompt", {"image": 16})
        self.llm = LLM(model=str(path), **options)
        self.chat = load_chat_encoder(str(path), self.llm.get_tokenizer())
        if vision:  # the processor expands image slots exactly as the trainer's model reads them
            from transformers import AutoProcessor

            self.chat = VisionChat(
                AutoProcessor.from_pretrained(str(path)), end_ids(str(path), self.chat.tokenizer)
            )
        self.sees_images = vision
        self.max_positions = int(self.llm.llm_engine.model_config.max_model_len)
        self.name = f"vllm:{path}"
        self.version = model_fingerprint(Path(path))
        self.entropy_top_k = entropy_top_k
        self.weights_lock = threading.Lock()  # a batch's generation, or a weight push

    def sampling_params(self, request: Request, prompt_tokens: int) -> Any:  # -> vllm.SamplingParams
        """vLLM's sampling settings for `request` (also used by the GPU benchmark, for the same work)."""
        from vllm import SamplingParams as VLLMSamplingParams

        sampling = request.sampling
        return VLLMSamplingParams(
            n=sampling.n,
            temperature=sampling.temperature,
            top_p=sampling.top_p,
            max_tokens=min(sampling.max_tokens, self.max_positions - prompt_tokens),
            stop=list(sampling.stop) or None,
            stop_token_ids=sorted(self.chat.end_ids),
            include_stop_str_in_output=True,  # the text stays exactly the decoded ids
            seed=sampling.seed,
            logprobs=self.entropy_top_k,  # the top-k and the sampled token's own logprob
            # never an image placeholder: one with no picture behind it breaks the trainer's forward pass
            logit_bias=dict.fromkeys(self.chat.placeholder_ids, -100.0)
            if isinstance(self.chat, VisionChat)
            else None,
        )

    def pixel_inputs(self, images: Sequence[Image]) -> dict[str, Any]:
        """The model's image tensors for `images` (for the trainer's forward pass; {} for text)."""
        return self.chat.pixel_inputs(images) if isinstance(self.chat, VisionChat) else {}

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        prompts = [list(r.prompt_ids or self.encode_prompt(r.messages, r.tools)) for r in requests]
        live = [i for i, ids in enumerate(prompts) if len(ids) < self.max_positions]
        params = [self.sampling_params(requests[i], len(prompts[i])) for i in live]
        with self.weights_lock:
            version = self.version
            outputs = self.llm.generate(
                [self._prompt(requests[i], prompts[i]) for i in live], params, use_tqdm=False
            )
        by_request = dict(zip(live, outputs, strict=True))
        completions = []
        for i, request in enumerate(requests):
            if i not in by_request:  # the prompt alone fills the context
                too_long = Completion("", finish_reason="length", prompt_tokens=len(prompts[i]))
                completions += [too_long] * request.sampling.n
                continue
            for sample in by_request[i].outputs:
                ids = list(sample.token_ids)
                steps = sample.logprobs or []  # per position {token id: Logprob}: top-k and the sampled
                logprobs = [step[token].logprob for step, token in zip(steps, ids, strict=False)]
                entropies = None
                if self.entropy_top_k and len(steps) == len(ids):
                    entropies = tuple(topk_entropy(lp.logprob for lp in step.values()) for step in steps)
                completions.append(
                    Completion(
                        self.chat.completion_text(ids),
                        finish_reason="length" if sample.finish_reason == "length" else "stop",
                        prompt_ids=tuple(prompts[i]),
                        completion_ids=tuple(ids),
                        logprobs=tuple(logprobs) if len(logprobs) == len(ids) else None,
                        entropies=entropies,
                        prompt_tokens=len(prompts[i]),
                        completion_tokens=len(ids),
                        policy_version=version,
                    )
                )
        return completions

    def _prompt(self, request: Request, ids: list[int]) -> Any:  # -> vllm.inputs.TokensPrompt
        """The engine's prompt: the ids, and the images whose placeholder runs they hold."""
        from vllm.inputs import TokensPrompt

        if not self.sees_images:
            return TokensPrompt(prompt_token_ids=ids)
        images = (
            request.images
            if request.prompt_ids is not None
            else [i for m in request.messages for i in m.images]
        )
        if not images:
            return TokensPrompt(prompt_token_ids=ids)
        return TokensPrompt(
            prompt_token_ids=ids, multi_modal_data={"image": [image.to_pil() for image in images]}
        )


def sync_weights(
    policy: VLLMPolicy, weights: Iterable[tuple[str, Any]], *, version: str | None = None
) -> None:
    """Load trained weights into the policy's vLLM engine, e.g. after each optimizer step.

    `weights` are (Hugging Face parameter name, tensor) pairs, such as a transformers model's
    `named_parameters()` (LoRA merged first); vLLM's own `load_weights` maps the names (it fuses
    q/k/v and gate/up projections itself). The prefix cache is dropped afterwards: cached KV
    blocks were computed with the old weights. `version` becomes the policy's version, which
    trajectories record in their provenance (and the replay buffer uses for staleness).

    The engine runs in this process when `VLLM_ENABLE_V1_MULTIPROCESSING=0` is set before it is
    made (what the trainer does): the tensors then go to the model without a copy; otherwise
    vLLM pickles them to its worker process.
    """
    named = [(name, tensor.detach()) for name, tensor in weights]

    def load(model: Any) -> None:  # runs inside each vLLM worker, on its torch module
        model.load_weights(named)

    with policy.weights_lock:
        policy.llm.apply_model(load)
        policy.llm.reset_prefix_cache()
        if version is not None:
            policy.version = version
