"""`gfcr/Math-v0`: answer a math problem with a final `\\boxed{}` answer, optionally using tools.

`answer_format="plain"` also reads an answer written without the box ("32 + 38 = 70"), with
math-verify's extraction: for small models that have not learned the box (see verifier.py).

Single-turn by default: the first action is the answer. With `tools=("calculator",)` the agent
may call tools for up to `max_turns - 1` turns; its first message without a tool call is the
answer. Reward 1.0 for a correct answer, 0.0 otherwise (no answer, wrong answer, malformed
action, turn limit reached, or a step whose tool calls go past `max_tool_calls` or `step_time_s`).

Signals: `format_ok` (a final answer was given: `\\boxed{}`, or any with "plain"),
`answer_extracted` (an answer could be read), `correct`.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any, ClassVar

from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, DEFAULT_MAX_OBSERVATION_CHARS, Outcome, TextEnv
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.math.calculator import calculator
from gfcr.envs.math.data import dataset_options, load_source
from gfcr.envs.math.verifier import AnswerFormat, MathVerifier, answer_signals, check_answer, extract_answer
from gfcr.envs.tasks import TaskSource
from gfcr.errors import UnknownNameError
from gfcr.sandboxes.tools import python_tool

# `python` runs a program in the process's shared sandbox (made on its first call).
TOOLS: dict[str, ToolSpec] = {"calculator": ToolSpec.from_function(calculator), "python": python_tool()}
ANSWER_FORMAT = "Put your final answer within \\boxed{}."
INSTRUCTIONS: dict[str, str] = {"boxed": ANSWER_FORMAT, "plain": "End your reply with the final answer."}
TOOL_HINT = (
    "You may call the tools {names} before answering; your reply without a tool call is your final answer."
)


class MathEnv(TextEnv):
    """Math problems with verifiable answers.

    >>> env = MathEnv(dataset="mmath", split="AIME2024")
    >>> obs, info = env.reset(options={"task_id": "mmath/AIME2024/0"})
    >>> env.step("The walk takes \\\\boxed{204} minutes.")[1:3]
    (1.0, True)
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "answer_extracted": False,
        "correct": False,
    }

    def __init__(
        self,
        dataset: str | Sequence[str] = "mmath",
        split: str = "all",
        *,
        tools: str | Sequence[str] = (),
        answer_format: AnswerFormat = "boxed",
        max_turns: int | None = None,
        system_prompt: str | None = None,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
        tasks: TaskSource | None = None,
        **options: Any,
    ) -> None:
        self.verifier = MathVerifier(answer_format)  # checks the name; GFCR modules can share it
        tools = [tools] if isinstance(tools, str) else list(tools)  # tools="calculator" means one tool
        unknown = [name for name in tools if name not in TOOLS]
        if unknown:
            raise UnknownNameError(
                "math tool", unknown[0], TOOLS, hint='pass a name or a list: tools=["calculator"]'
            )
        if tasks is None:
            names = [dataset] if isinstance(dataset, str) else list(dataset)
            _check_options(names, options)
            sources = [load_source(name, split=split, **options) for name in names]
            tasks = sources[0] if len(sources) == 1 else TaskSource.concat("+".join(names), sources)
        super().__init__(
            tasks,
            tools=[TOOLS[name] for name in tools],
            system_prompt=system_prompt,
            max_turns=max_turns or (8 if tools else 1),
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )

    def render_prompt(self, task: Task) -> str:
        hint = f"\n{TOOL_HINT.format(names=', '.join(self.tools))}" if self.tools else ""
        return f"{task.prompt}\n\n{INSTRUCTIONS[self.verifier.answer_format]}{hint}"

    def respond(self, action: Action) -> Outcome:
        if action.tool_calls:
            return self.run_tools(action)
        assert self.task is not None  # step() checks reset() was called
        # self.verifier's verdict, with the answer extracted once for the verdict and the message.
        answer = extract_answer(action.text, self.verifier.answer_format)
        if answer is None:
            # Past tense, and the episode named over: read as an instruction, the model would
            # answer again into an episode that has ended.
            rule = INSTRUCTIONS[self.verifier.answer_format].rstrip(".")
            no_answer = f"No final answer found, so the episode is over with reward 0 (the rule was: {rule})."
            return Outcome(no_answer, terminated=True, signals=answer_signals(None, False))
        correct = check_answer(self.task, answer)
        observation = f"Your answer {answer} is {'correct' if correct else 'incorrect'}."
        reward = 1.0 if correct else 0.0
        return Outcome(observation, reward=reward, terminated=True, signals=answer_signals(answer, correct))

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return f"The answer is \\boxed{{{task.gold}}}."


def _check_options(datasets: Sequence[str], options: dict[str, Any]) -> None:
    """Refuse a keyword neither MathEnv nor the datasets take, naming the nearest valid one."""
    allowed = {name for dataset in datasets for name in dataset_options(dataset)}
    for key in options:
        if key not in allowed:
            own = [p for p in inspect.signature(MathEnv.__init__).parameters if p not in ("self", "options")]
            takes = ", ".join(sorted(allowed)) or "no options of its own"
            hint = f"dataset {'+'.join(datasets)!r} takes {takes}"
            raise UnknownNameError("keyword argument of gfcr/Math-v0", key, [*own, *allowed], hint=hint)
