"""`gfcr/Shop-v0`: answer a shop question by chaining tool calls, one kind of question per procedure.

The tools are `price(item)`, `convert(amount, currency)`, `tax(amount, region)` and
`discount(amount, code)` (`gfcr.workloads`); each kind of question is answered by its own chain,
each call fed the previous result as `amount` (see `gfcr.envs.shop.tasks`). The kinds share tools
and chain shapes, so a procedure learnt on one kind (price then discount) is most of another's
(price, discount, then convert): a family where skills can transfer across kinds. `kinds=[...]`
picks the kinds the env's tasks hold (default: all).

An episode: tool calls, as many turns as needed (`max_turns`), then a reply without tool calls,
which is the answer and ends the episode. Reward 1.0 when the reply holds exactly one number,
that number equals the gold answer (within 1e-9) *and* it is one of the results the tools
returned in this episode; 0.0 otherwise. So a number guessed, copied from the prompt or
computed by hand earns nothing, whatever its value: the task is to run the procedure. (A chain
of other calls that happens to return the gold number is the procedure, by another path.)
Tools given a name not in their table answer with an error that lists the valid ones.

Signals: `format_ok` (the action could be read), `used_tool` (a tool returned a result),
`computed` (the reply's number is a tool result), `correct` (the reward's condition).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.core.trajectory import Signals
from gfcr.envs.base import Outcome, TextEnv
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.shop.tasks import shop_tasks
from gfcr.errors import ToolError
from gfcr.workloads import CHOICES, FUNCTIONS, KINDS

NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w.])")  # a number on its own
TOLERANCE = 1e-9  # the tools round to 4 decimals; an answer must be their number, not a rounding of it


class ShopEnv(TextEnv):
    """Chain the shop's tools to price an item, then answer with the result.

    >>> env = ShopEnv(kinds=["coupon"])
    >>> obs, info = env.reset(options={"task_id": "shop/coupon/0"})
    >>> while not env.done:
    ...     reply = ShopEnv.oracle(env.task, env.messages)
    ...     obs, reward, terminated, truncated, info = env.step(reply)
    >>> reward, info["signals"]["correct"]
    (1.0, True)
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "used_tool": False,
        "computed": False,
        "correct": False,
    }

    def __init__(
        self,
        kinds: str | Sequence[str] | None = None,
        *,
        max_turns: int = 6,
        system_prompt: str | None = None,
        max_action_chars: int = 4096,
        max_observation_chars: int = 4096,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
    ) -> None:
        tools = [
            dataclasses.replace(ToolSpec.from_function(f), function=functools.partial(self._call, f))
            for f in FUNCTIONS.values()
        ]
        super().__init__(
            shop_tasks(kinds),
            tools=tools,
            system_prompt=system_prompt,
            max_turns=max_turns,
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        self.results: list[float] = []  # what the tools returned this episode (skill tools' calls included)

    def begin_episode(self, task: Task) -> None:
        self.results = []

    def _call(self, function: Callable[..., float], **arguments: Any) -> float:
        """Run one shop tool on checked arguments and remember its result."""
        for name, value in arguments.items():
            if name in CHOICES and value not in CHOICES[name]:
                raise ToolError(f"unknown {name} {value!r}; one of {', '.join(CHOICES[name])}")
            if name == "amount" and not math.isfinite(value):
                raise ToolError(f"amount must be a finite number, got {value!r}")
        result = function(**arguments)
        self.results.append(result)
        return result

    def respond(self, action: Action) -> Outcome:
        if action.tool_calls:
            outcome = self.run_tools(action)
            return dataclasses.replace(outcome, signals={"format_ok": True, "used_tool": bool(self.results)})
        assert self.task is not None  # step() checks reset() was called
        numbers = NUMBER.findall(action.text)
        answer = float(numbers[0]) if len(numbers) == 1 else None
        computed = answer is not None and any(abs(answer - r) <= TOLERANCE for r in self.results)
        correct = computed and abs(answer - self.task.gold) <= TOLERANCE  # type: ignore[operator]
        if len(numbers) != 1:
            observation = f"The reply holds {len(numbers)} numbers: reply with the final number only."
        elif not computed:
            observation = f"{numbers[0]} is no tool's result: call the tools, then reply with their result."
        else:
            observation = "Correct." if correct else f"Wrong: {numbers[0]} is not the answer."
        signals: Signals = {"format_ok": True, "used_tool": bool(self.results), "computed": computed}
        signals["correct"] = correct
        return Outcome(observation, reward=float(correct), terminated=True, signals=signals)

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        """The next call of the task's procedure, fed the last result; then that result."""
        procedure = KINDS[task.metadata["kind"]][1]
        results = [m.text for m in messages if m.role == "tool"]
        if len(results) >= len(procedure):
            return results[-1]
        name = procedure[len(results)]
        params = task.metadata["params"]
        wanted = ToolSpec.from_function(FUNCTIONS[name]).parameters["properties"]
        arguments = {k: (float(results[-1]) if k == "amount" else params[k]) for k in wanted}
        return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments})}</tool_call>"
