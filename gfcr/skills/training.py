"""Skills inside training: the keep stage's skill library, its usage statistics and eviction.

Each training step, `SkillKeeper.keep(episodes)`:
1. counts, for every skill an episode used — its prompt carried it (its `Trajectory.guidance`
   holds the skill's text) or it called the skill's tool — one use and whether the episode
   succeeded; an episode that used no skill counts in its task category's without-skill baseline;
2. extracts skills from every judged successful episode (`SkillLibrary.extract`: procedures,
   helper functions, SQL that executed, patches that passed), stamped with the step;
3. evicts skills measured useless — after `min_uses` uses, a usefulness (Laplace-smoothed success
   with the skill minus its category's without any skill) below `min_usefulness` — and stale ones
   (no episode carried it for `stale_steps` steps).

With `as_tools`, the generate stage offers each prompt's top procedures and helper functions as
callable tools (`offer`: skill records on the episodes' specs, built into tools inside the env,
see `gfcr.skills.tools`); the offers are remembered until `keep`, so a call counts as a use of
the skill it named.

The trainer's `[replay.skills]` settings are `SkillTrainingConfig`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from gfcr.control.selection import task_category
from gfcr.core import EpisodeSpec, Trajectory, solved
from gfcr.core.config import setting
from gfcr.errors import ConfigError
from gfcr.skills.library import SkillConfig, SkillLibrary
from gfcr.skills.skill import Skill, tool_calls
from gfcr.skills.tools import TOOL_KINDS, tool_name


@dataclass(frozen=True)
class SkillTrainingConfig:
    """`[replay.skills]`: the run's skill library (out_dir/skills.db), grown from its episodes.

    >>> SkillTrainingConfig(enabled=True, stale_steps=-1)
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: [replay.skills] stale_steps must be >= 0 (0: never stale), got -1
    """

    enabled: bool = setting(
        False,
        "Keep the run's skill library (out_dir/skills.db): every judged successful episode adds its "
        "verified fragments; [generate.guidance] kind = 'skills' (skills unset) retrieves from it.",
    )
    success_at: float = setting(
        1.0, "An episode with at least this reward teaches skills and counts as a success."
    )
    top_k: int = setting(3, "Skills retrieved into a prompt.")
    min_score: float = setting(0.0, "BM25 score a skill must exceed to be retrieved.")
    min_uses: int = setting(8, "Uses before a skill's measured usefulness may evict it.")
    min_usefulness: float = setting(
        0.0,
        "Evict a skill (after min_uses) whose usefulness, smoothed success with it minus its task "
        "category's without any skill, is below this.",
    )
    stale_steps: int = setting(20, "Evict a skill no episode used for this many steps (0: never stale).")
    as_tools: bool = setting(
        False,
        "Offer each prompt's top_k procedures and helper functions as callable tools (skill_<name>): "
        "a procedure runs the env's own tools, a function runs in the sandbox; a call is a use.",
    )

    def __post_init__(self) -> None:
        if self.as_tools and not self.enabled:
            raise ConfigError(
                "[replay.skills] as_tools offers the run's skill library as tools: set enabled = true"
            )
        if self.top_k < 1:
            raise ConfigError(f"[replay.skills] top_k must be >= 1, got {self.top_k}")
        if self.min_uses < 1:
            raise ConfigError(f"[replay.skills] min_uses must be >= 1, got {self.min_uses}")
        if self.stale_steps < 0:
            raise ConfigError(
                f"[replay.skills] stale_steps must be >= 0 (0: never stale), got {self.stale_steps}"
            )

    def library(self, url: str) -> SkillLibrary:
        """A library at `url` that extracts and retrieves as these settings say."""
        return SkillLibrary(
            SkillConfig(url=url, success_at=self.success_at, top_k=self.top_k, min_score=self.min_score)
        )


class SkillKeeper:
    """The keep stage's skill library: one `keep(episodes)` per training step (see the module).

    >>> from gfcr.core import Message, Step, ToolCall
    >>> keeper = SkillKeeper(SkillTrainingConfig(enabled=True).library("sqlite://"), SkillTrainingConfig())
    >>> solved = Trajectory("e", "shop/1", "Price of a pear?", [Step("", "", 1.0, True, False)], messages=[
    ...     Message("assistant", "", (ToolCall("price", {"item": "pear"}),)), Message("tool", "2.0")])
    >>> keeper.keep([solved])["keep/skills/extracted"]
    1.0
    >>> guided = Trajectory("e", "shop/2", "Price of a plum?", [Step("", "", 0.0, True, False)],
    ...                     guidance=keeper.library.guidance("Price of a plum?"))
    >>> metrics = keeper.keep([guided])
    >>> metrics["generate/skills_retrieved"], [(s.uses, s.successes) for s in keeper.library]
    (1.0, [(1, 0)])
    """

    def __init__(
        self,
        library: SkillLibrary,
        config: SkillTrainingConfig,
        category: Callable[[str], str] = task_category,
    ) -> None:
        self.library, self.config, self.category = library, config, category
        self.step = 0  # keep stages run: the library's clock
        self.baseline: dict[str, list[int]] = {}  # category -> [successes, episodes] that used no skill
        self.offered: dict[str, dict[str, str]] = {}  # this step: task id -> {skill tool name: skill id}

    def carried(self, trajectory: Trajectory) -> list[Skill]:
        """The skills in the episode's prompt: those whose text its guidance holds."""
        guidance = trajectory.guidance
        return [skill for skill in self.library if guidance and skill.render() in guidance]

    def called(self, trajectory: Trajectory) -> list[str]:
        """The skill tools the episode called, one name per call, of those `offer` gave its task."""
        offered = self.offered.get(trajectory.task_id, {})
        calls = [c.name for m in trajectory.messages if m.role == "assistant" for c in tool_calls(m)]
        return [name for name in calls if name in offered]

    def used(self, trajectory: Trajectory) -> list[Skill]:
        """The skills the episode used: carried in its prompt, or called as tools (each once)."""
        offered = self.offered.get(trajectory.task_id, {})
        ids = {offered[name] for name in self.called(trajectory)}
        carried = self.carried(trajectory)
        ids -= {skill.id for skill in carried}
        return carried + [skill for skill in self.library if skill.id in ids]

    def tools_for(self, prompt: str) -> list[Skill]:
        """The skills an episode of `prompt` may call: its `top_k` best procedures and helper
        functions (SQL and patch fragments are guidance only), one per tool name."""
        by_name: dict[str, Skill] = {}
        for skill in self.library.retrieve(prompt, k=max(len(self.library), 1)):
            if skill.kind in TOOL_KINDS:
                by_name.setdefault(tool_name(skill), skill)
        return list(by_name.values())[: self.config.top_k]

    def offer(self, specs: Sequence[EpisodeSpec], prompt: Callable[[EpisodeSpec], str]) -> list[EpisodeSpec]:
        """`specs` with their prompts' skill tools (`tools_for`, retrieved once per task), remembered
        until `keep` so that a call counts as a use; `prompt(spec)` is the task's prompt."""
        skills: dict[str | None, list[Skill]] = {}
        for spec in specs:
            if spec.task_id not in skills:
                skills[spec.task_id] = self.tools_for(prompt(spec))
                self.offered[spec.task_id or ""] = {tool_name(s): s.id for s in skills[spec.task_id]}
        return [with_skills(spec, skills[spec.task_id]) for spec in specs]

    def usefulness(self, skill: Skill) -> float:
        """Smoothed success with the skill minus its category's without any skill (Laplace both)."""
        won, episodes = self.baseline.get(skill.category, [0, 0])
        return skill.success_rate - (won + 1) / (episodes + 2)

    def keep(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """One step's episodes: usage statistics, extraction, eviction; returns the step's metrics."""
        self.step += 1
        finished = [t for t in trajectories if t.status == "ok"]
        retrieved = offered = calls = call_successes = 0
        for trajectory in finished:
            success = solved(trajectory.reward, self.config.success_at)
            retrieved += len(self.carried(trajectory))
            names = {tool["function"]["name"] for tool in trajectory.tools if "function" in tool}
            offered += len(names & set(self.offered.get(trajectory.task_id, {})))
            called = len(self.called(trajectory))
            calls, call_successes = calls + called, call_successes + called * success
            skills = self.used(trajectory)
            for skill in skills:
                self.library.record(skill.id, success, step=self.step)
            if not skills:
                counts = self.baseline.setdefault(self.category(trajectory.task_id), [0, 0])
                counts[0] += int(success)
                counts[1] += 1
        before = {skill.id for skill in self.library}
        for trajectory in finished:
            if solved(trajectory.reward, self.config.success_at):  # judged successful
                self.library.extract(trajectory, step=self.step, category=self.category(trajectory.task_id))
        extracted = len({skill.id for skill in self.library} - before)
        evicted = self.evict()
        self.offered.clear()  # the next step offers afresh
        measured = [self.usefulness(skill) for skill in self.library if skill.uses]
        return {
            "keep/skills/extracted": float(extracted),
            "keep/skills/evicted": float(evicted),
            "keep/skills/size": float(len(self.library)),
            "keep/skills/usefulness_mean": float(np.mean(measured)) if measured else 0.0,
            "generate/skills_retrieved": float(retrieved),
            "generate/skill_tools_offered": float(offered),  # summed over the episodes
            "generate/skill_tool_calls": float(calls),
            "generate/skill_tool_successes": float(call_successes),  # calls in successful episodes
        }

    def evict(self) -> int:
        """Remove the skills measured useless and the stale ones; returns how many."""
        config = self.config
        gone = [
            skill
            for skill in self.library
            if (skill.uses >= config.min_uses and self.usefulness(skill) < config.min_usefulness)
            or (config.stale_steps and self.step - skill.last_used > config.stale_steps)
        ]
        for skill in gone:
            self.library.remove(skill.id)
        return len(gone)

    def state_dict(self) -> dict[str, Any]:
        """The library's skills with their statistics, the baseline and the step (a checkpoint's part)."""
        return {
            "step": self.step,
            "baseline": {k: list(v) for k, v in self.baseline.items()},
            "library": self.library.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.step = int(state["step"])
        self.baseline = {k: [int(v[0]), int(v[1])] for k, v in state["baseline"].items()}
        self.library.load_state_dict(state["library"])


def with_skills(spec: EpisodeSpec, skills: Sequence[Skill]) -> EpisodeSpec:
    """`spec` with `skills` as its episode's tools: their records, which the env builds into tools.

    >>> from gfcr.core import EnvConfig
    >>> spec = EpisodeSpec(EnvConfig("gfcr/ToolUse-v0"), "tooluse/0", seed=0)
    >>> lookup = Skill("lookup", "tool_sequence", "a locker's code", '[{"name": "lookup", "arguments": {}}]')
    >>> offered = with_skills(spec, [lookup])
    >>> offered.skills[0]["name"], offered.id == spec.id
    ('lookup', True)
    """
    return dataclasses.replace(spec, skills=tuple(dataclasses.asdict(skill) for skill in skills))
