"""Adaptive guidance: guide a prompt while the policy fails it, withdraw the guidance as it learns.

The hint-scaffolding line of work (e.g. Guide-GRPO, Nath et al. 2025, "Adaptive Guidance
Accelerates Reinforcement Learning of Reasoning Models"; QuestA, Li et al. 2025) gives guidance
only on the prompts the policy cannot yet solve, so the easy ones are learnt as they will be
asked and the hard ones still give a reward signal. `AdaptiveGuidance` is that decision over a
`PromptHistory`'s posteriors, as `GuidedPolicy`'s `when`; `guided` builds a trainer's guidance
from its `GuidanceConfig`.
"""

from __future__ import annotations

from dataclasses import dataclass

from gfcr.control.posterior import PromptHistory
from gfcr.core import Policy, Task
from gfcr.errors import ConfigError
from gfcr.generate.guidance import FewShot, GuidanceConfig, Guide, GuidedPolicy, Plan


@dataclass(frozen=True)
class AdaptiveGuidance:
    """Guide a task while its posterior mean success in `history` is below `below`.

    A task never seen has the prior's mean (0.5 for Beta(1, 1)), so it is guided only when
    `below` is above that; its first failures bring it under.

    >>> history = PromptHistory()
    >>> history.update("hard", [0.0, 0.0, 0.0, 0.0])  # posterior Beta(1, 5): mean 0.17
    >>> history.update("easy", [1.0, 1.0, 1.0, 1.0])  # Beta(5, 1): mean 0.83
    >>> guide = AdaptiveGuidance(history, below=0.3)
    >>> guide(Task("hard", "?")), guide(Task("easy", "?")), guide(Task("new", "?"))
    (True, False, False)
    """

    history: PromptHistory
    below: float = 0.3

    def __post_init__(self) -> None:
        if not 0.0 < self.below <= 1.0:
            raise ConfigError(f"below must be in (0, 1] (a posterior success rate), got {self.below}")

    def __call__(self, task: Task) -> bool:
        return self.history.get(task.id).mean < self.below


def guided(policy: Policy, config: GuidanceConfig, history: PromptHistory) -> Policy:
    """`policy` with the guidance `config` asks for (`policy` itself for kind "none"); with
    `adaptive_below`, only for the tasks `history` says the policy fails.

    >>> class Echo:
    ...     name, version = "echo", "1"
    ...     def generate(self, requests):
    ...         return [r.messages[0].text for r in requests]
    >>> policy = Echo()
    >>> guided(policy, GuidanceConfig(), PromptHistory()) is policy
    True
    >>> config = GuidanceConfig(kind="plan", plan="check units", adaptive_below=0.3)
    >>> guided(policy, config, PromptHistory()).when.below
    0.3
    """
    if config.kind == "none":
        return policy
    when = AdaptiveGuidance(history, config.adaptive_below) if config.adaptive_below is not None else None
    return GuidedPolicy(policy, guide_of(config), when)


def guide_of(config: GuidanceConfig) -> Guide:
    """The guide a `GuidanceConfig` (not kind "none") describes: few-shot examples, a plan, skills."""
    if config.kind == "fewshot":
        return FewShot(config.fewshot)
    if config.kind == "plan":
        return Plan(config.plan)
    from gfcr.skills import SkillLibrary  # BM25 and SQLAlchemy: loaded only for a skill library

    return SkillLibrary(config.skills)
