"""`gfcr/ToolUse-v0`: read a hidden code with a tool, then answer with it.

The smallest task where a policy must call a tool *and* use its result: each task hides a code
(a digit by default) that only the `lookup` tool reveals; the prompt does not contain it and the
codes are random per task, so there is nothing to memorise. The trainer's CPU demo trains a tiny
model on it (see docs/trainer.md).

Turn 1: call `<tool_call>{"name": "lookup", "arguments": {}}</tool_call>`; the observation is the
code (written `repeat` times with `repeat` > 1: a louder signal, with which a tiny randomly
initialised model learns to read it within minutes). Turn 2: reply with the code alone. Reward 1.0
for the right code after a lookup, 0.0 otherwise (a right guess without a lookup earns nothing:
the task is to use the tool).

Signals: `format_ok` (the action could be read), `used_tool` (lookup was called), `answered`
(the step was the reply), `correct`. The family's process rule (`[judge.process] scorer =
"rules"`) scores the tool steps by them (`lookup_level`): the first one that looked the code up.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from typing import ClassVar

from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.core.trajectory import Signals
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError
from gfcr.filter.process import ProcessScorer, ProgressScorer

LOOKUP_CALL = '<tool_call>{"name": "lookup", "arguments": {}}</tool_call>'
PROMPT = "What is the code of locker {name}? Look it up, then reply with the code only."


def locker_name(index: int) -> str:
    """Lockers are named by letters (aaa, aab, …): the code's digits are then the only digits the
    model sees, in the tool's answer."""
    letters = ""
    for _ in range(3):
        index, rest = divmod(index, 26)
        letters = chr(ord("a") + rest) + letters
    return letters


def tooluse_tasks(num_tasks: int = 10_000, num_codes: int = 10, seed: int = 0) -> TaskSource:
    """`num_tasks` lockers, each with a code drawn uniformly from 0..num_codes-1 (seeded).

    >>> source = tooluse_tasks(30, seed=1)
    >>> source[27].id, source[27].prompt.split("?")[0]
    ('tooluse/27', 'What is the code of locker abb')
    """
    if not 1 <= num_tasks <= 26**3 or not 2 <= num_codes <= 1000:
        raise ConfigError(
            f"need 1 <= num_tasks <= {26**3} and 2 <= num_codes <= 1000, got {num_tasks}, {num_codes}"
        )

    # functools.partial over module-level functions, not closures: the env must pickle
    build = functools.partial(_build_task, num_codes, seed)
    index_of = functools.partial(_index_of, num_tasks)
    return TaskSource(f"tooluse-{num_tasks}x{num_codes}", num_tasks, build, index_of)


def _build_task(num_codes: int, seed: int, index: int) -> Task:
    code = random.Random(seed * 1_000_003 + index).randrange(num_codes)
    return Task(f"tooluse/{index}", PROMPT.format(name=locker_name(index)), str(code), source="tooluse")


def _index_of(num_tasks: int, task_id: str) -> int | None:
    prefix, _, number = task_id.partition("/")
    if prefix != "tooluse" or not number.isdigit() or int(number) >= num_tasks:
        return None
    return int(number)


def lookup_level(signals: Signals) -> float | None:
    """A tool step's level: 1 once the code was looked up, 0 before (a malformed call, another
    tool); the reply is the outcome's to judge (None). Scored as progress (`ProgressScorer`), only
    the first lookup pays.

    >>> lookup_level({"used_tool": True}), lookup_level({"used_tool": False})
    (1.0, 0.0)
    >>> lookup_level({"used_tool": True, "answered": True, "correct": True}) is None
    True
    """
    if signals.get("answered"):
        return None
    return 1.0 if signals.get("used_tool") else 0.0


class ToolUseEnv(TextEnv):
    """Look up a locker's code with the `lookup` tool and answer with it.

    >>> env = ToolUseEnv()
    >>> obs, info = env.reset(options={"task_id": "tooluse/7"})
    >>> code, *_ = env.step(LOOKUP_CALL)
    >>> env.step(code)[1:3]
    (1.0, True)
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "used_tool": False,
        "answered": False,
        "correct": False,
    }
    process_rules: ClassVar[ProcessScorer | None] = ProgressScorer(lookup_level)

    def __init__(
        self,
        num_tasks: int = 10_000,
        num_codes: int = 10,
        *,
        seed: int = 0,
        repeat: int = 1,
        max_turns: int = 3,
        system_prompt: str | None = None,
        max_action_chars: int = 4096,
        max_observation_chars: int = 4096,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
    ) -> None:
        lookup = ToolSpec(
            "lookup",
            "Read the code of the locker in the question.",
            {"type": "object", "properties": {}},
            function=self._lookup,
        )
        super().__init__(
            tooluse_tasks(num_tasks, num_codes, seed),
            tools=[lookup],
            system_prompt=system_prompt,
            max_turns=max_turns,
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        if repeat < 1:
            raise ConfigError(f"repeat must be >= 1, got {repeat}")
        self.repeat = repeat
        self.used_tool = False

    def begin_episode(self, task: Task) -> None:
        self.used_tool = False

    def _lookup(self) -> str:
        assert self.task is not None  # tools run only inside step(), after reset()
        self.used_tool = True
        return " ".join([str(self.task.gold)] * self.repeat)

    def respond(self, action: Action) -> Outcome:
        if action.tool_calls:
            outcome = self.run_tools(action)
            return Outcome(
                outcome.observation,
                signals={"format_ok": True, "used_tool": self.used_tool},
                messages=outcome.messages,
            )
        assert self.task is not None  # step() checks reset() was called
        answer = action.text.strip()
        correct = self.used_tool and answer == self.task.gold
        if correct:
            observation = "Correct."
        elif not self.used_tool:
            observation = "No lookup was made: call the lookup tool before answering."
        else:
            observation = f"Wrong: {answer[:40]!r} is not the code."
        signals = {"format_ok": True, "used_tool": self.used_tool, "answered": True, "correct": correct}
        return Outcome(observation, reward=float(correct), terminated=True, signals=signals)

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        looked_up = any(m.role == "tool" for m in messages)
        return str(task.gold) if looked_up else LOOKUP_CALL
