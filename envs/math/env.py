"""`gfcr/Math-v0`: answer a math problem with a final `\\boxed{}` answer, optionally using tools.

Single-turn by default: the first action is the answer. With `tools=("calculator",)` the agent
may call tools for up to `max_turns - 1` turns; its first message without a tool call is the
answer. Reward 1.0 for a correct answer, 0.0 otherwise (no answer, wrong answer, malformed
action, turn limit reached).

Signals: `format_ok` (a final `\\boxed{}` answer was given),
`answer_extracted` (an answer could be read), `correct`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.math.calculator import calculator
from gfcr.envs.math.data import load_source
from gfcr.envs.math.equivalence import is_equivalent
from gfcr.envs.math.extract import extract_boxed
from gfcr.envs.tasks import TaskSource
from gfcr.errors import UnknownNameError

TOOLS: dict[str, ToolSpec] = {"calculator": ToolSpec.from_function(calculator)}
ANSWER_FORMAT = "Put your final answer within \\boxed{}."
TOOL_HINT = "You may call the tools {names} before answering; your reply without a tool call is your final answer."


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
        tools: Sequence[str] = (),
        max_turns: int | None = None,
        system_prompt: str | None = None,
        max_action_chars: int = 32_768,
        max_observation_chars: int = 65_536,
        render_mode: str | None = None,
        tasks: TaskSource | None = None,
        **options: Any,
    ) -> None:
        unknown = [name for name in tools if name not in TOOLS]
        if unknown:
            raise UnknownNameError("math tool", unknown[0], TOOLS)
        if tasks is None:
            names = [dataset] if isinstance(dataset, str) else list(dataset)
            sources = [load_source(name, split=split, **options) for name in names]
            tasks = sources[0] if len(sources) == 1 else TaskSource.concat("+".join(names), sources)
        super().__init__(
            tasks,
            tools=[TOOLS[name] for name in tools],
            system_prompt=system_prompt,
            max_turns=max_turns or (8 if tools else 1),
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            render_mode=render_mode,
        )

    def render_prompt(self, task: Task) -> str:
        hint = f"\n{TOOL_HINT.format(names=', '.join(self.tools))}" if self.tools else ""
        return f"{task.prompt}\n\n{ANSWER_FORMAT}{hint}"

    def respond(self, action: Action) -> Outcome:
        if action.tool_calls:
            return self.run_tools(action)
        assert self.task is not None  # step() checks reset() was called
        answer = extract_boxed(action.text)
        if answer is None:
            return Outcome(
                f"No final answer found. {ANSWER_FORMAT}",
                terminated=True,
                signals={"format_ok": False, "answer_extracted": False, "correct": False},
            )
        correct = check_answer(self.task, answer)
        verdict = "correct" if correct else "incorrect"
        return Outcome(
            f"Your answer {answer} is {verdict}.",
            reward=1.0 if correct else 0.0,
            terminated=True,
            signals={"format_ok": True, "answer_extracted": True, "correct": correct},
        )

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return f"The answer is \\boxed{{{task.gold}}}."


def check_answer(task: Task, answer: str) -> bool:
    """Whether `answer` solves `task`: reasoning-gym tasks use their generator's own scorer."""
    entry = task.metadata.get("entry")
    if entry is None:
        return is_equivalent(answer, str(task.gold))
    import reasoning_gym

    try:
        score = reasoning_gym.get_score_answer_fn(entry["metadata"]["source_dataset"])(answer, entry)
    except Exception:  # a generator's scorer choking on junk is a wrong answer, not a crash
        return False
    return score >= 1.0
