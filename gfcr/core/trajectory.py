"""The rollout τ = (x, u_1:T, o_1:T) as data: steps, token data, cost, provenance, JSONL I/O."""

from __future__ import annotations

import copy
import json
import math
import os
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gfcr.core.images import Image, ImageStore
from gfcr.core.messages import Message
from gfcr.errors import DataError
from gfcr.version import __version__

Signals = dict[str, float | bool]


@dataclass
class Step:
    """One transition: the action u_t, the observation o_t and what the env said about it.

    `state` is what the env recorded of its final state on the step that ended the episode
    (`info["state"]`, a JSON-able dict), for a verifier that re-judges the episode offline when
    the actions alone cannot (a browser page is gone after the episode); None on other steps and
    for envs that record none, and then left out of the JSON.

    `finish_reason` says why the policy's action ended: "length" (cut at its token cap, so the
    action may be incomplete), "tool_calls" (it ended on tool calls) or "stop" (it ended of its
    own accord); None where no policy wrote it (trajectories from before it existed, or steps
    played by other code), and then left out of the JSON.
    """

    action: str
    observation: str
    reward: float
    terminated: bool
    truncated: bool
    signals: Signals = field(default_factory=dict)
    state: dict[str, Any] | None = None
    finish_reason: str | None = None


@dataclass
class TokenData:
    """Token-in-token-out data, as the policy produced it (never re-tokenized).

    `completion_ids` covers every token after the prompt: the policy's own tokens and the
    observation tokens appended between turns; `loss_mask` is 1 on the former, 0 on the latter;
    `logprobs` are the sampling log-probabilities (0.0 where the policy did not sample).
    `entropies`, where the policy reports them, are the entropies (nats) of the distributions the
    policy's tokens were sampled from (0.0 on observation tokens); None where any turn lacked them.
    Shapes: len(completion_ids) == len(loss_mask) == len(logprobs) (== len(entropies)).
    `images` are the images a vision-language policy's tokens show, in the order of their
    placeholder tokens in `prompt_ids + completion_ids` (a trainer gives them to the model's
    forward pass with those ids); [] for text. `versions`, where every policy turn named numbered
    weights (a trainer's: `Completion.policy_version`), is the policy version that sampled each
    token (-1 on observation tokens): in asynchronous training one episode's turns may come
    from several versions; None where any turn's version was unknown.

    >>> tokens = TokenData([1])
    >>> tokens.append([5, 6], sampled=True, logprobs=[-0.5, -0.1], entropies=[2.0, 0.5])
    >>> tokens.append([9], sampled=False)
    >>> tokens.loss_mask, tokens.logprobs, tokens.entropies
    ([1, 1, 0], [-0.5, -0.1, 0.0], [2.0, 0.5, 0.0])
    >>> tokens.versions is None  # no turn named its version
    True
    """

    prompt_ids: list[int] = field(default_factory=list)
    completion_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    entropies: list[float] | None = None
    images: list[Image] = field(default_factory=list)
    versions: list[int] | None = None

    def __post_init__(self) -> None:
        lengths = {len(self.completion_ids), len(self.loss_mask), len(self.logprobs)}
        optional = {"entropies": self.entropies, "versions": self.versions}
        lengths |= {len(values) for values in optional.values() if values is not None}
        if len(lengths) != 1:
            given = "".join(f", {name} {len(v)}" for name, v in optional.items() if v is not None)
            raise DataError(
                f"token data lengths differ: completion_ids {len(self.completion_ids)}, "
                f"loss_mask {len(self.loss_mask)}, logprobs {len(self.logprobs)}{given}; "
                "they must be equal"
            )

    def append(
        self,
        ids: Sequence[int],
        *,
        sampled: bool,
        logprobs: Sequence[float] | None = None,
        entropies: Sequence[float] | None = None,
        images: Sequence[Image] = (),
        versions: Sequence[int] | None = None,
    ) -> None:
        """Add `ids` after the completion so far: the policy's own tokens (`sampled`: loss mask 1,
        their `logprobs`, 0.0 where None, and the policy `versions` that sampled each) or
        observation tokens (mask 0, logprob 0.0, version -1), with the `images` whose
        placeholder tokens they hold.

        Entropies and versions are kept while every sampled span has them, from the first: a span
        without them drops them all (a partial list would not line up with the tokens it leaves out).
        """
        started = bool(self.completion_ids)
        if not sampled:
            if self.entropies is not None:
                self.entropies += [0.0] * len(ids)
            if self.versions is not None:
                self.versions += [-1] * len(ids)
        else:
            if entropies is None or (self.entropies is None and started):
                self.entropies = None
            else:
                self.entropies = (self.entropies or []) + list(entropies)
            if versions is None or (self.versions is None and started):
                self.versions = None
            else:
                self.versions = (self.versions or []) + list(versions)
        self.completion_ids += ids
        self.images += images
        self.loss_mask += [int(sampled)] * len(ids)
        self.logprobs += list(logprobs) if sampled and logprobs is not None else [0.0] * len(ids)


@dataclass
class Cost:
    """What an episode cost: tokens in and out, seconds in the policy and in the env.

    `wall_s` is the episode's wall-clock seconds from its reset to its end: beside `policy_s` and
    `env_s` it shows the time spent waiting (for a runner slot, a worker); None where the writer
    did not record it (trajectories from before it existed).

    `wait_s` is the part of `env_s` the episode spent queued for shared resources, by resource:
    "env_server", "sandbox", "judge", "user" (see `gfcr.core.admission`); {} when it queued for
    none (and in trajectories from before it existed).
    """

    tokens_in: int = 0
    tokens_out: int = 0
    policy_s: float = 0.0
    env_s: float = 0.0
    wall_s: float | None = None
    wait_s: dict[str, float] = field(default_factory=dict)


@dataclass
class Provenance:
    """Where a trajectory came from: which policy (and version), which seed, when, which gfcr."""

    policy: str = ""
    policy_version: str = ""
    seed: int | None = None
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    gfcr_version: str = __version__


@dataclass
class Trajectory:
    """One episode: ids, the prompt, the steps, token data, cost and provenance.

    `status` is "ok" for an episode that ran to its end (whatever its reward) and "failed" when
    infrastructure failed it (`failure` says why); failed episodes are not agent failures.

    >>> t = Trajectory(env_id="gfcr/Math-v0", task_id="mmath/0", prompt="1+1?")
    >>> t.steps.append(Step("\\\\boxed{2}", "correct", 1.0, True, False, {"correct": True}))
    >>> Trajectory.from_json(t.to_json()) == t, t.total_reward
    (True, 1.0)
    """

    env_id: str
    task_id: str
    prompt: str
    steps: list[Step] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    tokens: TokenData | None = None
    cost: Cost = field(default_factory=Cost)
    provenance: Provenance = field(default_factory=Provenance)
    status: str = "ok"
    failure: str | None = None
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    # played through `gfcr/Remote-v0`: {"url", "kwargs"} of the server that ran `env_id` (masked)
    remote: dict[str, Any] | None = None
    # the tool specs offered to the policy (OpenAI function schemas), what the model saw beside the prompt
    tools: list[dict[str, Any]] = field(default_factory=list)
    # the guidance text put into the prompt (`gfcr.generate.GuidedPolicy`), "" for an unguided episode
    guidance: str = ""
    # the judge stage's reward, term by term (`gfcr.filter.JudgeStage`): each term's weighted part,
    # {"verifier": 1.0, "overlong": -0.25, ...}; {} where no judge stage ran
    reward_terms: dict[str, float] = field(default_factory=dict)

    @property
    def total_reward(self) -> float:
        """Sum of the step rewards."""
        return float(sum(step.reward for step in self.steps))

    @property
    def reward(self) -> float:
        """The reward an optimizer sees: the judge stage's terms summed (`reward_terms`), or the
        env's `total_reward` where no judge stage ran.

        >>> t = Trajectory("e", "t", "?", [Step("x", "", 1.0, True, False)])
        >>> t.reward, (t.reward_terms.update(verifier=1.0, overlong=-0.25) or t.reward)
        (1.0, 0.75)
        """
        return math.fsum(self.reward_terms.values()) if self.reward_terms else self.total_reward

    @property
    def signals(self) -> Signals:
        """The last step's signals (the episode's verdict), or {} before any step."""
        return self.steps[-1].signals if self.steps else {}

    @property
    def images(self) -> list[Image]:
        """Every distinct image the episode holds (its messages' and its token data's), in order."""
        seen = {image.sha256: image for m in self.messages for image in m.images}
        if self.tokens is not None:
            seen.update((image.sha256, image) for image in self.tokens.images if image.sha256 not in seen)
        return list(seen.values())

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict; `total_reward` is included for readers, recomputed on load. Images
        are referenced by hash (their bytes are stored apart: `write_jsonl`)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}  # no asdict: it would copy images
        data.update(
            steps=[asdict(step) for step in self.steps],
            messages=[m.to_dict() for m in self.messages],
            cost=asdict(self.cost),
            provenance=asdict(self.provenance),
            tools=copy.deepcopy(self.tools),
            remote=copy.deepcopy(self.remote),
            reward_terms=dict(self.reward_terms),
        )
        for step in data["steps"]:
            for optional in ("state", "finish_reason"):  # lines stay as they were before these existed
                if step[optional] is None:
                    del step[optional]
        if (tokens := self.tokens) is not None:
            data["tokens"] = {
                "prompt_ids": list(tokens.prompt_ids),
                "completion_ids": list(tokens.completion_ids),
                "loss_mask": list(tokens.loss_mask),
                "logprobs": list(tokens.logprobs),
            }
            if tokens.entropies is not None:  # likewise
                data["tokens"]["entropies"] = list(tokens.entropies)
            if tokens.images:  # likewise text-only lines
                data["tokens"]["images"] = [image.sha256 for image in tokens.images]
            if tokens.versions is not None:  # likewise lines of policies that name no versions
                data["tokens"]["versions"] = list(tokens.versions)
        if data["remote"] is None:  # lines of local envs stay as they were before it existed
            del data["remote"]
        if not data["tools"]:  # likewise lines of episodes offered no tools
            del data["tools"]
        if not data["guidance"]:  # likewise lines of unguided episodes
            del data["guidance"]
        if not data["reward_terms"]:  # likewise lines no judge stage scored
            del data["reward_terms"]
        data["total_reward"] = self.total_reward
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any], images: ImageStore | None = None) -> Trajectory:
        """Rebuild a trajectory from `to_dict()` output (unknown keys are an error); images
        referenced by hash are read from `images` when first used."""
        data = dict(data)
        data.pop("total_reward", None)
        try:
            tokens = data.pop("tokens", None)
            if tokens and tokens.get("images"):
                tokens = {**tokens, "images": _stored_images(tokens["images"], images)}
            return cls(
                steps=[Step(**{**s, "reward": _reward(s.get("reward"))}) for s in data.pop("steps", [])],
                messages=[Message.from_dict(m, images) for m in data.pop("messages", [])],
                tokens=TokenData(**tokens) if tokens else None,
                cost=Cost(**data.pop("cost", {})),
                provenance=Provenance(**data.pop("provenance", {})),
                **data,
            )
        except TypeError as e:
            raise DataError(f"not a gfcr trajectory: {e}") from e

    def to_json(self) -> str:
        """One line of strict JSON: NaN and infinities become null; lone surrogates and the Unicode
        line separators are escaped, so any line reader splits the file where gfcr does.

        >>> t = Trajectory(env_id="e", task_id="t", prompt="\\ud800", id="a")
        >>> t.steps.append(Step("x", "o", float("nan"), True, False))
        >>> line = t.to_json()
        >>> '"reward": null' in line, '\\\\ud800' in line, Trajectory.from_json(line).prompt == "\\ud800"
        (True, True, True)
        """
        data = self.to_dict()
        try:
            line = json.dumps(data, ensure_ascii=False, allow_nan=False)
        except ValueError:  # a NaN or infinite float: strict JSON has none
            line = json.dumps(_finite(data), ensure_ascii=False)
        try:
            line.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (UTF-8 cannot hold it): escape as \\uXXXX
            line = json.dumps(json.loads(line), ensure_ascii=True)
        # U+2028/U+2029 end lines for many JSONL readers (str.splitlines, JavaScript): escape them too.
        return line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")

    @classmethod
    def from_json(cls, line: str, images: ImageStore | None = None) -> Trajectory:
        return cls.from_dict(json.loads(line), images)


def image_store(path: str | Path) -> ImageStore:
    """Where the images of the trajectory file `path` are kept: the `images/` folder beside it,
    shared by every file of that folder (a run directory), each image stored once."""
    return ImageStore(Path(path).parent / "images")


def write_jsonl(trajectories: Iterable[Trajectory], path: str | Path, *, append: bool = False) -> int:
    """Write one trajectory per line, flushed and fsynced; returns how many were written.

    Every line is serialised before the file is touched, then all are written in one call, so a
    batch is written whole or not at all (a killed process leaves at most a truncated last line,
    which `read_jsonl` skips with a warning). Images are stored first, each once, by hash in the
    `images/` folder beside the file (`image_store`), so a line never refers to a missing image.
    """
    trajectories = list(trajectories)
    lines = [trajectory.to_json() + "\n" for trajectory in trajectories]
    store = image_store(path)
    for trajectory in trajectories:
        store.put_all(trajectory.images)
    with open(path, "a" if append else "w", encoding="utf-8") as f:
        f.write("".join(lines))
        f.flush()
        os.fsync(f.fileno())
    return len(lines)


def read_jsonl(path: str | Path) -> Iterator[Trajectory]:
    """Read trajectories back; a torn final line (from a killed writer) is skipped with a warning."""
    import logging

    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    store = image_store(path)
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            yield Trajectory.from_json(line, store)
        except json.JSONDecodeError as e:
            if number == len(lines) and not line.endswith("\n"):
                logging.getLogger(__name__).warning("%s: skipping torn last line %d", path, number)
                return
            raise DataError(f"{path}:{number}: not valid JSON ({e})") from e


def _stored_images(references: list[str], store: ImageStore | None) -> list[Image]:
    """The token data's images, from their hashes."""
    if store is None:
        raise DataError(
            "token data refers to images by hash but no image store was given; read trajectory files "
            "with gfcr.core.read_jsonl (it finds their images/ folder)"
        )
    return [Image.stored(sha256, store) for sha256 in references]


def _reward(value: Any) -> Any:
    """A step's reward read back: null (a NaN or infinity when written) is NaN again."""
    return math.nan if value is None else value


def _finite(value: Any) -> Any:
    """`value` with every NaN or infinite float replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_finite(v) for v in value]
    return value
