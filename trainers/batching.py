"""From trajectories to tensors: samples with advantages, micro-batches, token logprobs.

Token-in-token-out: a sample's ids are the trajectory's own `prompt_ids + completion_ids`, as the
policy produced them, and its loss mask is the trajectory's (1 on sampled tokens, 0 on the
prompt and on observation tokens between turns), so observations are never trained on and
nothing is re-tokenized. A sample keeps the behaviour policy's logprobs (the ones the rollout
engine reported when it sampled the tokens) and that policy's version; its old logprobs, the
ratio's denominator, start as those and are recomputed by the trainer where they are off-policy
(a replayed sample, `gfcr.trainers.update.correct_off_policy`).

Advantages are per token: a group estimator's one per sequence is broadcast to the sequence's
sampled tokens, a tree estimator gives each token its tree node's (`token_tree_advantages`).

Images: a vision-language policy's sample keeps the images its ids show (`TokenData.images`), and
a micro-batch carries their pixel tensors (`MicroBatch.vision`, from the model's processor: the
`pixels` function), which every forward pass of the trainer takes beside the ids, so the logprobs
and the loss are those of the tokens given the very pixels the policy saw.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch

from gfcr.core import Image, Trajectory
from gfcr.core.policy import version_number
from gfcr.errors import DataError, UnknownNameError
from gfcr.filter import ADVANTAGE_ESTIMATORS, group_advantages
from gfcr.filter.process_credit import ProcessCredit
from gfcr.generate import TREE_ESTIMATORS, token_tree_advantages

ESTIMATORS = (*ADVANTAGE_ESTIMATORS, *TREE_ESTIMATORS)  # what `samples_from_groups` takes
Pixels = Callable[[Sequence[Image]], dict[str, torch.Tensor]]  # images -> the model's image tensors


@dataclass(frozen=True)
class Sample:
    """One trajectory ready for the loss. Lists run over `input_ids` (prompt + completion)."""

    input_ids: list[int]
    loss_mask: list[int]  # 1 where the policy sampled the token
    old_logprobs: list[float]  # π_old: the ratio's denominator per token (0.0 where mask is 0)
    advantages: list[float]  # each token's advantage (0.0 where mask is 0)
    reward: float = 0.0
    replayed: bool = False  # from the replay buffer (an older policy's tokens and logprobs)
    # μ: the behaviour policy's logprobs, as the engine that sampled the tokens reported them
    # (None: old_logprobs are them, until the trainer recomputes those)
    behaviour_logprobs: list[float] | None = None
    policy_version: int | None = None  # the oldest policy version among its tokens (None: unknown)
    is_weights: list[float] | None = None  # truncated importance weights per token (None: all 1)
    images: tuple[Image, ...] = ()  # whose placeholder runs `input_ids` hold, in order
    versions: list[int] | None = None  # the version that sampled each token (-1: not sampled)

    def __post_init__(self) -> None:
        lengths = {len(self.input_ids), len(self.loss_mask), len(self.old_logprobs), len(self.advantages)}
        optional = (self.behaviour_logprobs, self.is_weights, self.versions)
        lengths |= {len(v) for v in optional if v is not None}
        if len(lengths) != 1:
            raise DataError(
                f"sample lengths differ: input_ids {len(self.input_ids)}, loss_mask {len(self.loss_mask)}, "
                f"old_logprobs {len(self.old_logprobs)}, advantages {len(self.advantages)} (and "
                "behaviour_logprobs, is_weights, versions where given); they must be equal"
            )

    @property
    def behaviour(self) -> list[float]:
        """μ's logprob of each token: `behaviour_logprobs`, else the old logprobs (not recomputed)."""
        return self.old_logprobs if self.behaviour_logprobs is None else self.behaviour_logprobs

    @property
    def num_loss_tokens(self) -> int:
        return sum(self.loss_mask)

    @property
    def advantage(self) -> float:
        """The sequence's advantage: the mean over its loss tokens (the one broadcast, if it was)."""
        on_loss = [a for a, m in zip(self.advantages, self.loss_mask, strict=True) if m]
        return math.fsum(on_loss) / max(1, len(on_loss))


def sample_from_trajectory(
    trajectory: Trajectory, advantage: float | Sequence[float], reward: float | None = None
) -> Sample:
    """The sample of one trajectory; it must carry token data (from a `TokenPolicy`: hf:, vllm:).
    `advantage`: one for the sequence (broadcast to its sampled tokens), or one per completion
    token (aligned with `tokens.completion_ids`; kept only where the loss mask is 1). `reward` is
    the one its advantage came from (None: the trajectory's task reward).

    >>> from gfcr.core import TokenData
    >>> t = Trajectory("e", "t", "x", tokens=TokenData([1, 2], [3, 4, 5], [1, 0, 1], [-0.5, 0.0, -0.25]))
    >>> s = sample_from_trajectory(t, 1.0)
    >>> s.input_ids, s.loss_mask, s.num_loss_tokens, s.advantages
    ([1, 2, 3, 4, 5], [0, 0, 1, 0, 1], 2, [0.0, 0.0, 1.0, 0.0, 1.0])
    >>> sample_from_trajectory(t, [0.5, 9.0, -1.0]).advantages  # per token: 9.0 is an observation's
    [0.0, 0.0, 0.5, 0.0, -1.0]
    """
    tokens = trajectory.tokens
    if tokens is None or not tokens.prompt_ids:
        raise DataError(
            f"trajectory {trajectory.id} ({trajectory.env_id}) has no token data; training needs a policy "
            "that keeps token ids (hf:PATH or vllm:PATH), not text-only backends"
        )
    n = len(tokens.completion_ids)
    per_token = [float(advantage)] * n if isinstance(advantage, int | float) else list(advantage)
    if len(per_token) != n:
        raise DataError(
            f"trajectory {trajectory.id}: {len(per_token)} advantages for {n} completion tokens; "
            "give one per completion token, or one float for the sequence"
        )
    sampled = [float(a) if m else 0.0 for a, m in zip(per_token, tokens.loss_mask, strict=True)]
    prompt = len(tokens.prompt_ids)
    versions = None if tokens.versions is None else [-1] * prompt + list(tokens.versions)
    own = [v for v, m in zip(tokens.versions or (), tokens.loss_mask, strict=False) if m]
    return Sample(
        input_ids=tokens.prompt_ids + tokens.completion_ids,
        loss_mask=[0] * prompt + list(tokens.loss_mask),
        old_logprobs=[0.0] * prompt + list(tokens.logprobs),
        advantages=[0.0] * prompt + sampled,
        reward=trajectory.total_reward if reward is None else float(reward),
        replayed=bool(trajectory.signals.get("replayed", False)),
        policy_version=min(own) if own else version_number(trajectory.provenance.policy_version),
        images=tuple(tokens.images),
        versions=versions,
    )


def samples_from_groups(
    groups: Mapping[str, Sequence[Trajectory]],
    estimator: str = "grpo",
    reward: Callable[[Trajectory], float] | None = None,
    process: ProcessCredit | None = None,
    *,
    scale: Callable[[Sequence[Trajectory]], float] | None = None,
) -> list[Sample]:
    """Samples of every group (one task's trajectories), with per-token advantages of
    `reward(trajectory)` (None: `Trajectory.reward`, the judge stage's, else the env's):

    - a group estimator ("grpo", "dr_grpo", "rloo": Filter's `group_advantages`) gives one per
      sequence, broadcast to its sampled tokens;
    - a tree estimator ("treerl", "treerpo": `token_tree_advantages`) gives each token the
      advantage of its node in the tree of the group's token sequences (a prefix shared with a
      branch, or by chance with another sample, is one node valued by all the leaves under it).

    With `process` (the judge stage's process scores, `gfcr.filter.process_credit`), each token's
    advantage is the outcome's plus `process.weight` times its step's (or segment's) process
    advantage: `advantage + weight · process advantage`, per token, on either estimator.

    With `scale` (SEED-GRPO's `gfcr.filter.seed_grpo.SeedGRPO.scale`), every advantage of a group
    (its process part included) is multiplied by `scale(group)`.

    Trajectories with no sampled token (an episode that failed before the policy spoke) are left
    out after the advantages are computed, so they still count in their group's baseline.

    >>> from gfcr.core import Step, TokenData
    >>> def traj(tid, completion, reward):
    ...     n = len(completion)
    ...     return Trajectory("e", "t", "?", [Step("", "", reward, True, False)], id=tid,
    ...                       tokens=TokenData([7], completion, [1] * n, [0.0] * n))
    >>> group = [traj("1", [1, 2, 3], 1.0), traj("2", [1, 2, 4], 0.0), traj("3", [5, 6], 0.0)]
    >>> [[round(a, 3) for a in s.advantages] for s in samples_from_groups({"t": group}, "treerl")]
    [[0.0, 0.236, 0.236, 1.167], [0.0, 0.236, 0.236, -0.833], [0.0, -0.667, -0.667]]
    >>> [round(s.advantage, 3) for s in samples_from_groups({"t": group}, "grpo")]
    [1.155, -0.577, -0.577]
    """
    if estimator not in ESTIMATORS:
        raise UnknownNameError("advantage estimator", estimator, ESTIMATORS)
    samples = []
    for group in groups.values():
        rewards = [t.reward if reward is None else reward(t) for t in group]
        advantages: Sequence[float | Sequence[float]]
        if estimator in TREE_ESTIMATORS:
            by_id = token_tree_advantages(group, estimator, outcome=reward)
            advantages = [by_id[t.id] for t in group]
        else:
            advantages = group_advantages(rewards, estimator).tolist()
        if process is not None:
            advantages = [
                mix_process(outcome, steps, process.weight)
                for outcome, steps in zip(advantages, process.token_advantages(group), strict=True)
            ]
        if scale is not None and (factor := scale(group)) != 1.0:  # e.g. SEED-GRPO's damping
            advantages = [a * factor if isinstance(a, float) else [x * factor for x in a] for a in advantages]
        for trajectory, r, advantage in zip(group, rewards, advantages, strict=True):
            if trajectory.tokens is not None and sum(trajectory.tokens.loss_mask) > 0:
                samples.append(sample_from_trajectory(trajectory, advantage, r))
    return samples


def mix_process(outcome: float | Sequence[float], process: Sequence[float], weight: float) -> list[float]:
    """Per completion token: the outcome advantage (one per sequence, or per token) plus `weight`
    times the process advantage.

    >>> mix_process(1.0, [0.5, 0.0, -0.5], 0.2), mix_process([1.0, 2.0], [1.0, 1.0], 0.5)
    ([1.1, 1.0, 0.9], [1.5, 2.5])
    """
    per_token = [float(outcome)] * len(process) if isinstance(outcome, int | float) else list(outcome)
    return [a + weight * p for a, p in zip(per_token, process, strict=True)]


@dataclass
class MicroBatch:
    """Right-padded tensors of a few samples; targets are shifted one token left of inputs.

    input_ids, attention_mask: (B, L); loss_mask, old_logprobs, advantages: (B, L-1) aligned
    with the logprob of token t+1 given tokens <= t. `vision`: the image tensors of the samples'
    images, in order, as the model's forward pass takes them (e.g. `pixel_values`: (N, 3, H, W));
    {} for text.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    old_logprobs: torch.Tensor
    advantages: torch.Tensor
    is_weights: torch.Tensor  # (B, L-1): 1.0 where a sample has none
    vision: dict[str, torch.Tensor] = field(default_factory=dict)

    def to(self, device: str | torch.device) -> MicroBatch:
        moved = {name: t.to(device) for name, t in vars(self).items() if name != "vision"}
        return MicroBatch(**moved, vision={name: t.to(device) for name, t in self.vision.items()})


def collate(samples: Sequence[Sample], pad_id: int = 0, pixels: Pixels | None = None) -> MicroBatch:
    """Pad `samples` on the right into one `MicroBatch`; `pixels` makes the image tensors of
    samples with images (a vision-language model's processor, `HFPolicy.pixel_inputs`)."""
    width = max(len(s.input_ids) for s in samples)
    size = (len(samples), width)
    input_ids = torch.full(size, pad_id, dtype=torch.long)
    attention_mask = torch.zeros(size, dtype=torch.long)
    loss_mask = torch.zeros(size, dtype=torch.float32)
    old_logprobs = torch.zeros(size, dtype=torch.float32)
    advantages = torch.zeros(size, dtype=torch.float32)
    is_weights = torch.ones(size, dtype=torch.float32)
    for row, s in enumerate(samples):
        n = len(s.input_ids)
        input_ids[row, :n] = torch.tensor(s.input_ids)
        attention_mask[row, :n] = 1
        loss_mask[row, :n] = torch.tensor(s.loss_mask, dtype=torch.float32)
        old_logprobs[row, :n] = torch.tensor(s.old_logprobs, dtype=torch.float32)
        advantages[row, :n] = torch.tensor(s.advantages, dtype=torch.float32)
        if s.is_weights is not None:
            is_weights[row, :n] = torch.tensor(s.is_weights, dtype=torch.float32)
    return MicroBatch(
        input_ids,
        attention_mask,
        loss_mask[:, 1:],
        old_logprobs[:, 1:],
        advantages[:, 1:],
        is_weights[:, 1:],
        vision=_vision(samples, pixels),
    )


def _vision(samples: Sequence[Sample], pixels: Pixels | None) -> dict[str, torch.Tensor]:
    """The image tensors of `samples`' images, row by row in placeholder order ({} for none)."""
    images = [image for s in samples for image in s.images]
    if not images:
        return {}
    if pixels is None:
        raise DataError(
            f"{sum(1 for s in samples if s.images)} samples show images but the trainer has no image "
            "processor to give the model their pixels; train them with the vision-language model that "
            "generated them (an hf: model folder with a processor, e.g. from `gfcr tiny-model --vision`)"
        )
    return pixels(images)


def micro_batches(
    samples: Sequence[Sample], size: int, pad_id: int = 0, pixels: Pixels | None = None
) -> Iterator[MicroBatch]:
    """Consecutive micro-batches of at most `size` samples."""
    for start in range(0, len(samples), size):
        yield collate(samples[start : start + size], pad_id, pixels)


def token_logprobs(model: torch.nn.Module | Callable[..., Any], batch: MicroBatch) -> torch.Tensor:
    """log π(token_{t+1} | tokens_<=t) under `model`'s raw logits (as the rollout reports them),
    shape (B, L-1), float32. `model`: a causal LM, or any callable taking its keywords.

    Only the positions from the batch's first loss token on are scored; those before it (the
    prompts, 0.0 here) predict nothing the loss, the KL or a recomputed π_old reads. The model is
    asked for their logits alone (`logits_to_keep`), so the vocabulary projection and its gradient
    skip the prompt, most of a multi-turn sample's length; the values are the same to float
    rounding. The (B, kept, V) logits are the one full-vocabulary tensor kept (V is 49k for
    SmolLM2, 150k for Qwen): `SelectedLogprob` works through them a chunk of positions at a time.
    """
    first = first_loss_position(batch.loss_mask)
    keep = batch.input_ids.shape[1] - first
    out = model(
        input_ids=batch.input_ids, attention_mask=batch.attention_mask, logits_to_keep=keep, **batch.vision
    )
    logits = out.logits[:, -keep:]  # a model that ignores logits_to_keep gives every position
    scored = cast(torch.Tensor, SelectedLogprob.apply(logits, batch.input_ids[:, first + 1 :]))
    return torch.nn.functional.pad(scored, (first, 0))


def first_loss_position(loss_mask: torch.Tensor) -> int:
    """The first position (of L-1) where any row of `loss_mask` (B, L-1) has a loss token; 0 when
    none has one.

    >>> first_loss_position(torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0]]))
    1
    """
    scored = loss_mask.any(dim=0).nonzero()
    return int(scored[0]) if len(scored) else 0


class SelectedLogprob(torch.autograd.Function):
    """log softmax(logits[:, t])[targets[:, t]] for each position t < L-1 (in float32), with its
    gradient, a chunk of positions at a time: the forward pass keeps only the logsumexps and the
    backward pass writes one gradient tensor, where autograd's log-softmax and gather would hold
    three or four (B, L, V) temporaries.

    >>> logits = torch.randn(2, 4, 10, dtype=torch.float64, requires_grad=True)
    >>> targets = torch.randint(0, 10, (2, 3))
    >>> torch.autograd.gradcheck(SelectedLogprob.apply, (logits, targets))
    True
    """

    CHUNK_ELEMENTS = 1 << 24  # the float32 temporaries of one chunk of positions: 64 MB

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:  # (B, L, V), (B, L-1)
        precision = torch.promote_types(logits.dtype, torch.float32)  # float32, or float64's own
        lse = torch.empty(targets.shape, dtype=precision, device=logits.device)
        for row, span in SelectedLogprob._chunks(logits):
            lse[row, span] = torch.logsumexp(logits[row, span].to(precision), dim=-1)
        ctx.save_for_backward(logits, targets, lse)
        picked = logits[:, :-1].gather(-1, targets[..., None]).squeeze(-1)
        return picked.to(lse.dtype) - lse

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # (B, L-1)
        logits, targets, lse = ctx.saved_tensors
        out = torch.zeros_like(logits)  # the last position predicts nothing here
        for row, span in SelectedLogprob._chunks(logits):  # d/dlogits = one-hot(target) - softmax
            softmax = (logits[row, span].to(lse.dtype) - lse[row, span, None]).exp_()
            out[row, span] = softmax.mul_(-grad[row, span, None])
        out[:, :-1].scatter_add_(-1, targets[..., None], grad[..., None].to(out.dtype))
        return out, None

    @staticmethod
    def _chunks(logits: torch.Tensor) -> Iterator[tuple[int, slice]]:
        """(row, positions) of at most CHUNK_ELEMENTS logits each, over positions 0 … L-2."""
        batch, length, vocab = logits.shape
        step = max(1, SelectedLogprob.CHUNK_ELEMENTS // vocab)
        for row in range(batch):
            for start in range(0, length - 1, step):
                yield row, slice(start, min(start + step, length - 1))
