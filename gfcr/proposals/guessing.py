"""The guess baseline of a proposed task: how often the solver hits its answer with the question withheld.

Learnability (`learnability`) pays for a solver success s inside the band, but s alone cannot tell a
task the solver works out from one whose answer it hits by chance: a yes/no question, a pick of
three, an answer that is always "0" lands s near 0.5 and teaches nothing. So each verified
proposal is also attempted blind — the same gold, the question withheld (`blind_task`; each family
decides what withholding means, `gfcr.envs.proposals.ProposalFamily.withheld`) — and the blind
success p0 is the policy's guess rate on that answer. A task whose s does not beat p0 by a margin
is `guessable`: it earns its proposer nothing.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gfcr.core import Task
from gfcr.errors import ConfigError

# What a blind attempt is asked, in every family: an answer, without saying to what.
BLIND_PROMPT = "Give your answer."
_TOLERANCE = 1e-9  # success rates are means of a few 0/1 outcomes: compare them exactly, not to the ulp


def blind_task(task: Task, **changes: Any) -> Task:
    """`task` with its question withheld: the same gold, source and metadata (a family's `changes`
    replace more, e.g. the code a stub shows), `BLIND_PROMPT` as its prompt, and its own id.

    >>> blind_task(Task("gen/7", "Is 91 prime? Answer yes or no.", "no", "generated"))
    Task(id='gen/7/blind', prompt='Give your answer.', gold='no', source='generated', metadata={})
    """
    return dataclasses.replace(task, id=f"{task.id}/blind", prompt=BLIND_PROMPT, **changes)


def guessable(success: float, guess_rate: float, min_gain: float) -> bool:
    """Whether the solver's success on a task beats its guess rate (blind success) by less than
    `min_gain`: what it solves, it solves about as often without reading the question.

    >>> guessable(0.5, 0.5, 0.25), guessable(0.5, 0.0, 0.25), guessable(0.75, 0.5, 0.25)
    (True, False, False)
    """
    for name, rate in (("success", success), ("guess_rate", guess_rate), ("min_gain", min_gain)):
        if not 0.0 <= rate <= 1.0:
            raise ConfigError(f"{name} is a rate in [0, 1], got {rate}")
    return success - guess_rate < min_gain - _TOLERANCE
