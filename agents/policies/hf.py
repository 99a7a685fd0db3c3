"""`hf:PATH`: a local model through transformers and torch, batched, with token ids and logprobs.

Requests are expanded to one row per sample (`n`), grouped by their sampling settings and
generated in left-padded batches of similar prompt lengths, at most `max_batch_size` rows and
`max_batch_tokens` padded prompt tokens each (one long prompt does not pad the whole batch to its
length). Log-probabilities are those of
the model's raw logits (before temperature and top-p), as vLLM reports them by default; entropies
(`Completion.entropies`) are those of the distribution each token is drawn from, the logits after
temperature and top-p (under greedy decoding, the raw logits). Rows of a batch that share their
prompt (a group's samples of one prompt, a tree's branches of one parent at one token) share its
prefill: its KV cache is computed once and copied to each (`_shared_prompt_cache`). Each
seeded sample draws from a random generator of its own (`_RowSampler`, seeded by `sample_seed`), so
its tokens depend on its seed and prompt, not on which other requests shared its batch: a seeded
run samples the same whether the runner batched it under load or idle. The device is chosen
automatically (CUDA, then Apple MPS, then CPU) unless given.

A vision-language model (a folder whose config has a `vision_config`, e.g. one written by
`gfcr tiny-model --vision`) is loaded with its processor (`gfcr.agents.policies.vision`): the
policy `sees_images`, its prompt ids hold each image's placeholder run, and each row's images go
into generation as pixel tensors. Rows with images do not share prefills (equal ids may stand for
different pixels), an image's hash is part of its sample's seed, and the image placeholder tokens
are never sampled (a placeholder with no picture behind it would break the trainer's forward pass).

Weights can be pushed in while the policy serves (`load_weights`, a trainer's weight sync): a
push waits for the batch being generated and the next batch waits for the push, so every
completion comes from one set of weights, named by its `Completion.policy_version`. An
`interruptible` policy does not make a push wait for a whole batch: the push stops it after the
token being generated, and each row not finished comes back with `finish_reason="interrupted"`
and the tokens it has; the runner asks for the rest of the turn, which the new weights sample.
"""

from __future__ import annotations

import copy
import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gfcr.agents.policies.chat import ChatEncoder, ChatTokens, end_ids, load_chat_encoder
from gfcr.agents.policies.vision import VisionChat, is_vision_model
from gfcr.core import Image
from gfcr.core.policy import Completion, Request, SamplingParams
from gfcr.errors import ConfigError, PolicyError, needs_extra

logger = logging.getLogger(__name__)
Decode = Callable[[Sequence[int]], str]


@dataclass(frozen=True)
class _Row:
    """One sample to generate: which request it answers and the ids to continue."""

    request: int
    prompt_ids: tuple[int, ...]
    sampling: SamplingParams
    seed: int | None = None  # this sample's own: the request's seed, prompt and which of its n
    images: tuple[Image, ...] = ()  # whose placeholder runs `prompt_ids` hold, in order


class HFPolicy(ChatTokens):
    """A causal LM (or a vision-language model) from a local directory (or hub id already in the
    local cache). A LoRA adapter's directory (a `gfcr train` checkpoint of a LoRA run) loads as its
    base model with the adapter merged in (`merged_adapter`). The weights keep the checkpoint's
    dtype on an accelerator and load in float32 on a CPU (`load_dtype`).

    >>> import tempfile
    >>> from gfcr.agents.policies.tiny_model import write_tiny_model
    >>> from gfcr.core import Message
    >>> policy = HFPolicy(write_tiny_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20))
    >>> request = Request((Message("user", "What is 2+2?"),), sampling=SamplingParams(max_tokens=8, seed=0))
    >>> completion = policy.generate([request])[0]
    >>> len(completion.completion_ids) == len(completion.logprobs) <= 8
    True
    """

    def __init__(
        self,
        path: str | Path,
        *,
        device: str | None = None,
        max_batch_size: int = 64,
        max_batch_tokens: int = 65_536,
    ) -> None:
        _check_model_path(str(path))
        with needs_extra("the hf: backend"):
            import torch
            from transformers import (
                AutoModelForCausalLM,
                AutoModelForImageTextToText,
                AutoProcessor,
                AutoTokenizer,
            )
            from transformers.utils import logging as hf_logging

        if max_batch_size < 1 or max_batch_tokens < 1:
            raise ConfigError(
                "max_batch_size and max_batch_tokens must be >= 1, "
                f"got {max_batch_size} and {max_batch_tokens}"
            )
        hf_logging.disable_progress_bar()
        vision = is_vision_model(Path(path))
        self.device = device or _auto_device(torch)
        dtype = load_dtype(self.device)
        try:
            if vision:
                processor = AutoProcessor.from_pretrained(str(path))
                self.tokenizer = processor.tokenizer
                self.model = AutoModelForImageTextToText.from_pretrained(str(path), dtype=dtype)
            else:
                self.tokenizer = AutoTokenizer.from_pretrained(str(path), padding_side="left")
                self.model = (
                    merged_adapter(Path(path), dtype)
                    if (Path(path) / "adapter_config.json").exists()
                    else AutoModelForCausalLM.from_pretrained(str(path), dtype=dtype)
                )
        except (OSError, ValueError) as e:
            raise PolicyError(
                f"cannot load a model from {str(path)!r}: {e}; give a directory with config.json, weights "
                "and "
                "a tokenizer (e.g. one written by `gfcr tiny-model DIR`)"
            ) from e
        self.model.to(self.device).eval()  # type: ignore[arg-type]  # transformers' stubs
        chat = (
            VisionChat(processor, end_ids(str(path), self.tokenizer))
            if vision
            else load_chat_encoder(str(path), self.tokenizer)
        )
        self._setup(chat, max_batch_size, max_batch_tokens)
        self.name = f"hf:{path}"
        self.version = model_fingerprint(Path(path))

    @classmethod
    def from_model(
        cls,
        model: Any,
        tokenizer: Any,
        *,
        name: str = "hf:in-memory",
        version: str = "0",
        max_batch_size: int = 64,
        max_batch_tokens: int = 65_536,
        processor: Any = None,
    ) -> HFPolicy:
        """A policy over a model already in memory, such as one a trainer is updating.

        It generates with those very weights on the model's own device (an optimizer step is live
        at the next call) and leaves the model's train/eval mode alone. The end-of-turn ids are
        the model's generation config's eos ids (the tokenizer's eos token if it has none). A
        vision-language model is given with its `processor` (`tokenizer` is then its tokenizer).

        >>> import tempfile
        >>> from transformers import AutoModelForCausalLM, AutoTokenizer
        >>> from gfcr.agents.policies.tiny_model import write_tiny_model
        >>> path = write_tiny_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20)
        >>> model, tokenizer = AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)
        >>> policy = HFPolicy.from_model(model, tokenizer, version="step-0")
        >>> policy.model is model, policy.version
        (True, 'step-0')
        """
        if max_batch_size < 1 or max_batch_tokens < 1:
            raise ConfigError(
                "max_batch_size and max_batch_tokens must be >= 1, "
                f"got {max_batch_size} and {max_batch_tokens}"
            )
        policy = cls.__new__(cls)
        policy.model, policy.tokenizer = model, tokenizer
        policy.device = str(next(model.parameters()).device)
        eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        ends = [eos] if isinstance(eos, int) else list(eos or [tokenizer.eos_token_id])
        chat = VisionChat(processor, ends) if processor is not None else ChatEncoder(tokenizer, ends)
        policy._setup(chat, max_batch_size, max_batch_tokens)
        policy.name, policy.version = name, version
        return policy

    def _setup(self, chat: ChatEncoder, max_batch_size: int, max_batch_tokens: int) -> None:
        """What every constructor sets once `model`, `tokenizer` and `device` are in place."""
        self.max_batch_size = max_batch_size
        self.max_batch_tokens = max_batch_tokens
        self.chat = chat
        self.processor = chat.processor if isinstance(chat, VisionChat) else None
        self.sees_images = self.processor is not None
        self.end_ids = sorted(chat.end_ids)
        self.pad_id = (
            self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else self.end_ids[0]
        )
        self.max_positions = int(getattr(self.model.config, "max_position_embeddings", 1 << 30))
        self.weights_lock = threading.Lock()  # held by each batch's generation and by `load_weights`
        self.interruptible = False  # a push stops the batch being generated (see the module's docs)
        self.push_pending = threading.Event()  # set while a push waits for the weights

    def replica(self, model: Any, version: str | None = None) -> HFPolicy:
        """This policy generating with `model` (a copy of its weights, say) instead: the trainer's
        rollout engine in asynchronous training, whose weights it pushes (`load_weights`) while
        it updates its own. Chat template, end ids and batch limits are this policy's.

        >>> import copy, tempfile
        >>> from gfcr.agents.policies.tiny_model import write_tiny_model
        >>> policy = HFPolicy(write_tiny_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20))
        >>> twin = policy.replica(copy.deepcopy(policy.model), version="0")
        >>> twin.model is policy.model, twin.end_ids == policy.end_ids, twin.version
        (False, True, '0')
        """
        twin = copy.copy(self)
        twin.model = model
        twin.weights_lock, twin.push_pending = threading.Lock(), threading.Event()
        twin.version = self.version if version is None else version
        return twin

    def load_weights(self, weights: Mapping[str, Any] | Iterable[tuple[str, Any]], version: str) -> None:
        """Copy `weights` (parameter name -> tensor, some or all of the model's) into the model in
        place and name them `version`; a batch being generated finishes with the weights it began
        with. A name the model lacks, or a tensor of another shape, is refused before anything is
        copied.

        >>> import tempfile, torch
        >>> from gfcr.agents.policies.tiny_model import write_tiny_model
        >>> policy = HFPolicy(write_tiny_model(tempfile.mkdtemp(), vocab_size=400, corpus_tasks=20))
        >>> name, weight = next(iter(policy.model.named_parameters()))
        >>> policy.load_weights({name: torch.zeros_like(weight)}, version="7")
        >>> policy.version, float(dict(policy.model.named_parameters())[name].detach().abs().sum())
        ('7', 0.0)
        """
        import torch

        params = dict(self.model.named_parameters())
        given = dict(weights.items() if isinstance(weights, Mapping) else weights)
        unknown = sorted(n for n in given if n not in params)
        mismatched = sorted(
            n for n in given if n in params and tuple(given[n].shape) != tuple(params[n].shape)
        )
        if unknown or mismatched:
            raise PolicyError(
                f"cannot load weights into {self.name}: "
                + (
                    f"unknown parameters {unknown[:3]}{'...' if len(unknown) > 3 else ''}; "
                    if unknown
                    else ""
                )
                + (f"other shapes for {mismatched[:3]}; " if mismatched else "")
                + "push tensors named and shaped as the model's own parameters (model.named_parameters())"
            )
        self.push_pending.set()  # an interruptible batch stops at its next token
        try:
            with self.weights_lock, torch.no_grad():
                for name, tensor in given.items():
                    params[name].copy_(tensor.to(params[name].device, params[name].dtype))
                self.version = version
        finally:
            self.push_pending.clear()

    def pixel_inputs(self, images: Sequence[Image]) -> dict[str, Any]:
        """The model's image tensors for `images`, in order ({} for none, or for a text model)."""
        return self.chat.pixel_inputs(images) if isinstance(self.chat, VisionChat) else {}

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        rows: list[_Row] = []
        for i, request in enumerate(requests):
            ids = request.prompt_ids or tuple(self.encode_prompt(request.messages, request.tools))
            images = self._images(request)
            sampling = request.sampling
            rows += [
                _Row(i, ids, sampling, sample_seed(sampling.seed, k, ids, images), images)
                for k in range(sampling.n)
            ]
        results: list[Completion | None] = [None] * len(rows)
        groups: dict[tuple, list[int]] = {}
        for index, row in enumerate(rows):
            s = row.sampling
            groups.setdefault((s.temperature, s.top_p, s.stop), []).append(index)
        for indices in groups.values():
            # equal prompts side by side, so that a batch holds them together and shares their prefill
            by_length = sorted(indices, key=lambda i: (len(rows[i].prompt_ids), rows[i].prompt_ids))
            for chunk in _chunks(by_length, rows, self.max_batch_size, self.max_batch_tokens):
                for index, completion in zip(
                    chunk, self._generate_rows([rows[i] for i in chunk]), strict=True
                ):
                    results[index] = completion
        return [completion for completion in results if completion is not None]

    def _images(self, request: Request) -> tuple[Image, ...]:
        """The images a request's prompt ids show: the runner's (`Request.images`) with its ids,
        else those of its messages; none for a text model."""
        if not self.sees_images:
            return ()
        if request.prompt_ids is not None:
            return request.images
        return tuple(image for m in request.messages for image in m.images)

    def _generate_rows(self, rows: list[_Row]) -> list[Completion]:
        """One `model.generate` call for rows that share temperature, top_p and stop strings."""
        import torch

        budgets = [min(row.sampling.max_tokens, self.max_positions - len(row.prompt_ids)) for row in rows]
        live = [i for i, budget in enumerate(budgets) if budget > 0]
        out: list[Completion] = [
            Completion("", finish_reason="length", prompt_tokens=len(r.prompt_ids)) for r in rows
        ]
        if not live:
            return out
        width = max(len(rows[i].prompt_ids) for i in live)
        input_ids = torch.tensor(
            [[self.pad_id] * (width - len(rows[i].prompt_ids)) + list(rows[i].prompt_ids) for i in live]
        )
        attention_mask = (
            torch.arange(width) >= torch.tensor([[width - len(rows[i].prompt_ids)] for i in live])
        ).long()
        sampling = rows[live[0]].sampling
        sampler = _RowSampler([rows[i].seed for i in live], sampling, self.device)
        input_ids, attention_mask = input_ids.to(self.device), attention_mask.to(self.device)
        images = [image for i in live for image in rows[i].images]  # in placeholder order, row by row
        pixels = {name: t.to(self.device) for name, t in self.pixel_inputs(images).items()}
        pushed = _StopForPush(self.push_pending if self.interruptible else None)
        with self.weights_lock, torch.inference_mode():
            version = self.version  # the weights this batch is generated with, pushed or not
            cache = (
                {}
                if images  # equal ids, other pixels: a prompt with images is never shared
                else _shared_prompt_cache(
                    self.model, input_ids, attention_mask, [rows[i].prompt_ids for i in live]
                )
            )
            generated = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                **cache,
                **pixels,
                max_new_tokens=max(budgets[i] for i in live),
                do_sample=False,  # greedy over the sampler's perturbed scores: a draw per row
                logits_processor=[sampler],
                temperature=None,
                top_p=None,
                top_k=None,
                eos_token_id=self.end_ids,
                pad_token_id=self.pad_id,
                suppress_tokens=self.chat.placeholder_ids if isinstance(self.chat, VisionChat) else None,
                stopping_criteria=[_StopStrings(width, sampling.stop, self.chat.decode), pushed],
                output_logits=True,
                return_dict_in_generate=True,
            )
        new_tokens = generated.sequences[:, width:].tolist()  # (B, T)
        logprobs = torch.stack(
            [
                torch.log_softmax(step.float(), dim=-1)
                .gather(1, generated.sequences[:, width + t, None])
                .squeeze(1)
                for t, step in enumerate(generated.logits)
            ],
            dim=1,
        ).tolist()  # (B, T): logprob of each sampled token under the raw logits
        entropies = torch.stack(sampler.entropies, dim=1).tolist()  # (B, T)
        for row_number, i in enumerate(live):
            ids, finish = self._cut(new_tokens[row_number], budgets[i], rows[i].sampling.stop)
            if pushed.fired and finish == "length" and len(ids) < budgets[i]:
                finish = "interrupted"  # its turn goes on after the push
            out[i] = Completion(
                self.chat.completion_text(ids),
                finish_reason=finish,
                prompt_ids=rows[i].prompt_ids,
                completion_ids=tuple(ids),
                logprobs=tuple(logprobs[row_number][: len(ids)]),
                entropies=tuple(entropies[row_number][: len(ids)]),
                prompt_tokens=len(rows[i].prompt_ids),
                completion_tokens=len(ids),
                policy_version=version,
            )
        return out

    def _cut(self, ids: list[int], budget: int, stop: tuple[str, ...]) -> tuple[list[int], str]:
        """The row's own tokens: up to its end-of-turn token, stop string or token budget."""
        for k, token in enumerate(ids[:budget]):
            if token in self.end_ids:
                return ids[: k + 1], "stop"
            if stop and _ends_with_stop(ids[: k + 1], stop, self.chat.decode):
                return ids[: k + 1], "stop"
        return ids[:budget], "length"


def _shared_prompt_cache(
    model: Any, input_ids: Any, attention_mask: Any, prompts: Sequence[tuple[int, ...]]
) -> dict[str, Any]:
    """`generate`'s keyword argument for a KV cache of each row's prompt but its last token, computed
    once per distinct prompt; `{}` (no cache: a plain `generate`) when no prompt repeats.

    `input_ids` and `attention_mask` are the batch's left-padded prompts, (B, W); `prompts` the
    rows' own ids. One forward pass over the U distinct prompts, (U, W - 1), fills the cache with
    the positions and mask `generate` would use; each row then gets a copy of its prompt's entries,
    (B, W - 1), and `generate` runs only the last prompt token and what follows. Tokens, logprobs
    and entropies are those of a plain `generate` up to float rounding (a tie between two tokens
    may in principle break the other way).

    The rule: reuse whenever two rows share a prompt. It saves (B - U)·(W - 1) prefill tokens for
    one cache copy, which costs less than one decoding step (that step's cache append already
    copies it); with every prompt distinct there is nothing to save and the plain path runs. A
    recurrent cache (transformers' `is_linear` layers) holds no per-token entries to share, so such
    models always take the plain path.
    """
    import torch

    slot: dict[tuple[int, ...], int] = {}
    inverse = [slot.setdefault(prompt, len(slot)) for prompt in prompts]  # (B,) each row's distinct prompt
    if len(slot) == len(prompts) or input_ids.shape[1] < 2:
        return {}
    first = [inverse.index(k) for k in range(len(slot))]  # (U,) a row of each distinct prompt
    mask = attention_mask[first, :-1]  # (U, W - 1)
    prefill = model.get_decoder()(  # no LM head: the cache is all the prefill is for
        input_ids=input_ids[first, :-1],
        attention_mask=mask,
        position_ids=(mask.cumsum(-1) - 1).clamp(min=0),  # as `generate` counts them: pads first
        use_cache=True,
    )
    name = "cache" if "cache" in prefill else "past_key_values"  # its name before transformers 5.24
    cache = prefill[name]
    if any(getattr(cache, "is_linear", ())):
        return {}
    cache.batch_select_indices(torch.tensor(inverse, device=input_ids.device))  # (U, ...) -> (B, ...)
    return {name: cache}


def _chunks(indices: list[int], rows: list[_Row], max_rows: int, max_tokens: int) -> Iterator[list[int]]:
    """`indices`, sorted by prompt length, cut into batches of at most `max_rows` rows and
    `max_tokens` padded prompt tokens (a prompt longer than that goes alone)."""
    chunk: list[int] = []
    for i in indices:
        width = len(rows[i].prompt_ids)  # the longest so far: they come shortest first
        if chunk and (len(chunk) == max_rows or (len(chunk) + 1) * width > max_tokens):
            yield chunk
            chunk = []
        chunk.append(i)
    if chunk:
        yield chunk


def sample_seed(
    seed: int | None, k: int, prompt_ids: Sequence[int], images: Sequence[Image] = ()
) -> int | None:
    """The generator seed of sample `k` (from 0) of a request seeded `seed` with these prompt ids
    (and images).

    The prompt is part of it: episodes of different tasks share seeds (sample j of every task in a
    group gets `seed + j`), and with the seed alone a nearly uniform model would write the same
    text for every task; two tasks of one question about different images have equal ids, so the
    images' hashes are part of it too.

    >>> sample_seed(None, 0, (1, 2)) is None, sample_seed(7, 0, (1, 2)) == sample_seed(7, 0, (1, 2))
    (True, True)
    >>> len({sample_seed(7, 0, (1, 2)), sample_seed(7, 1, (1, 2)), sample_seed(7, 0, (1, 3))})
    3
    """
    if seed is None:
        return None
    pictures = "".join(f"#{image.sha256}" for image in images)
    digest = hashlib.sha256(f"{seed}#{k}#{','.join(map(str, prompt_ids))}{pictures}".encode()).digest()
    return int.from_bytes(digest[:7], "big")


class _RowSampler:
    """A `transformers` logits processor that samples each row with a random generator of its own,
    and records the entropy of the distribution each row draws from.

    The Gumbel-max trick: the scores are scaled by the temperature and cut to the top-p nucleus
    (transformers' own warpers), then each row adds `-log(E)`, with E ~ Exp(1) drawn from its
    generator; `generate`'s greedy pick of the largest is then a draw from the row's softmax. A row
    without a seed draws from torch's global generator. At temperature 0 the scores pass unchanged
    (greedy decoding).

    `entropies` holds one (B,) tensor per generated token: the entropy (nats) of the softmax of
    the scores after the warpers, before the draws (at temperature 0, of the raw scores).
    """

    def __init__(self, seeds: list[int | None], sampling: SamplingParams, device: str) -> None:
        import torch
        from transformers import TemperatureLogitsWarper, TopPLogitsWarper

        sample = sampling.temperature > 0
        self.warpers: list[Any] = [TemperatureLogitsWarper(sampling.temperature)] if sample else []
        if sample and sampling.top_p < 1.0:
            self.warpers.append(TopPLogitsWarper(sampling.top_p))
        self.generators = (
            [None if seed is None else torch.Generator(device).manual_seed(seed) for seed in seeds]
            if sample
            else None
        )
        self.entropies: list[Any] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for warper in self.warpers:
            scores = warper(input_ids, scores)
        # entr(p) = -p log p, 0 where top-p cut a token (p = 0)
        self.entropies.append(torch.special.entr(torch.softmax(scores, dim=-1)).sum(dim=-1))  # (B,)
        if self.generators is None:
            return scores
        draws = torch.stack(
            [torch.empty_like(scores[0]).exponential_(generator=g) for g in self.generators]
        )  # (B, V): each row's from its own generator, whatever shares the batch
        return scores - draws.log()


def _ends_with_stop(ids: Sequence[int], stop: tuple[str, ...], decode: Decode) -> bool:
    """Whether the text of `ids` ends in a stop string (a string of L characters spans <= L tokens)."""
    return any(s in decode(ids[-(len(s) + 1) :]) for s in stop)


class _StopStrings:
    """A `transformers` stopping criterion on the generated tokens only (its own `stop_strings`
    also match text that begins in the prompt)."""

    def __init__(self, prompt_width: int, stop: tuple[str, ...], decode: Decode) -> None:
        self.prompt_width, self.stop, self.decode = prompt_width, stop, decode

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        if not self.stop:
            return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        rows = input_ids[:, self.prompt_width :].tolist()  # (B, T) generated so far
        stopped = [_ends_with_stop(row, self.stop, self.decode) for row in rows]
        return torch.tensor(stopped, device=input_ids.device)


class _StopForPush:
    """A `transformers` stopping criterion that stops every row once `pending` is set (a weight
    push waits); `fired` says it did. With `pending` None it never stops anything."""

    def __init__(self, pending: threading.Event | None) -> None:
        self.pending, self.fired = pending, False

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        self.fired = self.fired or (self.pending is not None and self.pending.is_set())
        return torch.full((input_ids.shape[0],), self.fired, dtype=torch.bool, device=input_ids.device)


def merged_adapter(path: Path, dtype: Any) -> Any:
    """The causal LM of a LoRA adapter's directory: its base model with the adapter merged into the
    weights. It generates at the base model's speed, and a trainer given the directory as
    `[model] path` (RL after a LoRA SFT run) starts from the warm start and trains adapters of its
    own on top, where loading the adapter unmerged would put the new adapters in its place. `dtype`:
    as `from_pretrained`'s (`load_dtype`)."""
    with needs_extra("a LoRA checkpoint (peft)"):
        from peft import AutoPeftModelForCausalLM

    return AutoPeftModelForCausalLM.from_pretrained(str(path), dtype=dtype).merge_and_unload()


def load_dtype(device: str) -> Any:
    """The dtype a model's weights load in on `device`: the checkpoint's own ("auto") on an
    accelerator, float32 on a CPU. Most hub checkpoints store bf16, and a CPU without bf16
    instructions (any AVX2-only one) has torch emulate bf16 matmuls, 45x slower than float32 on an
    AVX2 EPYC; float32 is also what transformers before v5 loaded unless told otherwise.

    >>> load_dtype("cpu"), load_dtype("cuda:0")
    (torch.float32, 'auto')
    """
    import torch

    return torch.float32 if torch.device(device).type == "cpu" else "auto"


def _check_model_path(path: str) -> None:
    """Refuse a model path that is no folder here and no hub model in the local cache, before
    transformers tries the hub (which hangs or fails obscurely without a network)."""
    if Path(path).is_dir():
        return
    looks_like_hub_id = path.count("/") == 1 and not path.startswith((".", "/", "~"))
    if looks_like_hub_id:
        from huggingface_hub import try_to_load_from_cache

        if isinstance(try_to_load_from_cache(path, "config.json"), str):
            return
    raise PolicyError(
        f"model folder {path!r} does not exist"
        + (" (nor is it a hub model in the local cache)" if looks_like_hub_id else "")
        + f"; write a small one with `gfcr tiny-model {path}`, or give a folder with config.json, "
        "weights and a tokenizer"
    )


def _auto_device(torch: Any) -> str:
    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def model_fingerprint(path: Path) -> str:
    """A short id of the model files (names, sizes, config), so trajectories name the weights used."""
    digest = hashlib.sha256()
    if path.is_dir():
        for file in sorted(path.iterdir()):
            digest.update(f"{file.name}:{file.stat().st_size}".encode())
        if (path / "config.json").exists():
            digest.update((path / "config.json").read_bytes())
    else:
        digest.update(str(path).encode())
    return digest.hexdigest()[:12]
