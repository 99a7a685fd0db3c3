"""The proposer's episode: one turn whose completion is a proposed task.

The proposer prompt is a `Task` the propose stage builds (`proposer_prompt`) and passes with
`reset(options={"task": task})`; the env takes the completion and ends the episode with reward 0:
whether the proposal verifies, and how learnable it is, is decided by the propose stage, which
gives the episode its reward (`gfcr.trainers.propose`). Played with a seed alone, it shows a
generic proposer prompt.
"""

from __future__ import annotations

from typing import ClassVar

from gfcr.core import Action, EnvConfig, Task
from gfcr.core.trajectory import Signals
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, Outcome, TextEnv
from gfcr.envs.tasks import TaskSource

GENERIC_PROMPT = "Propose a new task a learner could practise on, with what checks an answer to it."


class ProposeEnv(TextEnv):
    """One turn: the proposer writes a task; the episode ends with reward 0 (the propose stage
    rewards it).

    >>> env = ProposeEnv()
    >>> _ = env.reset(options={"task": Task("propose/0", "Write a math problem.")})
    >>> env.step("<problem>What is 2+3?</problem>")[1:3]
    (0.0, True)
    """

    signal_defaults: ClassVar[Signals] = {"format_ok": False}

    def __init__(
        self, max_action_chars: int = DEFAULT_MAX_ACTION_CHARS, render_mode: str | None = None
    ) -> None:
        source = TaskSource.from_tasks("propose", [Task("propose/generic", GENERIC_PROMPT)])
        super().__init__(source, max_action_chars=max_action_chars, render_mode=render_mode)

    def respond(self, action: Action) -> Outcome:
        return Outcome("Proposal received.", terminated=True, signals={"format_ok": True})


# Not listed among the env families (it has no verifier of its own): the runner registers it
# from this entry point when an episode first uses it.
PROPOSE_ENV = EnvConfig("gfcr/Propose-v0", {}, "gfcr.envs.proposals.env:ProposeEnv")
