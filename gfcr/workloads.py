"""Synthetic workloads with a known ground truth, for measuring the GFCR modules.

`BernoulliPrompts`: prompts whose success probabilities are known; a sample of prompt i is
correct with probability p_i. It stands in for "a policy on a dataset" wherever only rewards
matter (selection, dynamic sampling, early stopping, budgets, replay rescue), so the effect of
a module can be measured against the truth rather than estimated.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from gfcr.core import Message, Provenance, Step, Task, ToolCall, ToolSpec, Trajectory
from gfcr.errors import ConfigError


class BernoulliPrompts:
    """Prompts `synthetic/<i>` with success probabilities `probs`; `run(plan)` samples them.

    Each sample is a one-step trajectory with reward 1.0 (signal `correct`) or 0.0, an answer
    whose length in characters is drawn from `lengths` (correct answers from its lower half),
    and provenance naming `policy_version`.

    >>> env = BernoulliPrompts([0.0, 1.0], seed=0)
    >>> [t.total_reward for t in env.run({"synthetic/0": 2, "synthetic/1": 2})]
    [0.0, 0.0, 1.0, 1.0]
    """

    def __init__(
        self,
        probs: Sequence[float],
        *,
        seed: int = 0,
        lengths: tuple[int, int] = (40, 400),
        policy_version: str = "0",
    ) -> None:
        if not probs or not all(0.0 <= p <= 1.0 for p in probs):
            raise ConfigError(
                f"probs must be a non-empty list of probabilities in [0, 1], got {list(probs)[:5]}…"
            )
        if not 0 < lengths[0] < lengths[1]:
            raise ConfigError(f"lengths must be (low, high) with 0 < low < high, got {lengths}")
        self.task_ids = [f"synthetic/{i}" for i in range(len(probs))]
        self.probs = dict(zip(self.task_ids, (float(p) for p in probs), strict=True))
        self.lengths = lengths
        self.policy_version = policy_version
        self.rng = np.random.default_rng(seed)
        self.samples = 0  # samples drawn so far (the cost)

    def run(self, plan: Mapping[str, int]) -> list[Trajectory]:
        """`plan[task_id]` fresh samples of each task, grouped by task in plan order."""
        out = []
        low, high = self.lengths
        for task_id, count in plan.items():
            for _ in range(count):
                correct = bool(self.rng.random() < self.probs[task_id])
                length = int(self.rng.integers(low, (low + high) // 2 if correct else high))
                step = Step(
                    "x" * length,
                    "correct" if correct else "wrong",
                    float(correct),
                    True,
                    False,
                    {"correct": correct},
                )
                out.append(
                    Trajectory(
                        "synthetic",
                        task_id,
                        f"prompt {task_id}",
                        [step],
                        provenance=Provenance("synthetic", self.policy_version),
                    )
                )
        self.samples += len(out)
        return out


PRICES = {
    "apple": 0.5,
    "pear": 0.8,
    "plum": 0.3,
    "mango": 1.7,
    "kiwi": 0.4,
    "fig": 0.9,
    "lime": 0.25,
    "melon": 3.2,
}
RATES = {"EUR": 0.92, "GBP": 0.79, "JPY": 151.0, "CHF": 0.88}
TAXES = {"CA": 0.0725, "NY": 0.04, "TX": 0.0625, "WA": 0.065}
COUPONS = {"SAVE10": 0.10, "HALF": 0.50, "VIP5": 0.05}
KINDS = {  # kind -> (prompt template, the procedure that solves it)
    "convert": ("How much does a {item} cost, converted to {currency}?", ("price", "convert")),
    "tax": ("What does a {item} cost with sales tax in {region}?", ("price", "tax")),
    "coupon": ("With coupon {code}, what is the price of a {item}?", ("price", "discount")),
    "coupon_convert": (
        "With coupon {code}, what is the price of a {item}, converted to {currency}?",
        ("price", "discount", "convert"),
    ),
}


def price(item: str) -> float:
    """The price of an item in USD.

    Args:
        item: The item's name.
    """
    return PRICES[item]


def convert(amount: float, currency: str) -> float:
    """Convert a USD amount to another currency.

    Args:
        amount: The amount in USD.
        currency: EUR, GBP, JPY or CHF.
    """
    return round(amount * RATES[currency], 4)


def tax(amount: float, region: str) -> float:
    """Add a region's sales tax to an amount.

    Args:
        amount: The amount before tax.
        region: CA, NY, TX or WA.
    """
    return round(amount * (1 + TAXES[region]), 4)


def discount(amount: float, code: str) -> float:
    """Apply a coupon to an amount.

    Args:
        amount: The amount before the coupon.
        code: The coupon code.
    """
    return round(amount * (1 - COUPONS[code]), 4)


# the shop's tools, by name
FUNCTIONS: dict[str, Callable[..., float]] = {f.__name__: f for f in (price, convert, tax, discount)}
CHOICES = {"item": PRICES, "currency": RATES, "region": TAXES, "code": COUPONS}  # argument -> its table


def run_procedure(procedure: Sequence[str], params: Mapping[str, str]) -> float:
    """The result of calling `procedure`'s tools in turn, each fed the previous result as `amount`
    and the task's `params` for its other arguments: the gold answer of a shop task.

    >>> run_procedure(("price", "discount"), {"item": "melon", "code": "HALF"})
    1.6
    """
    result = 0.0
    for name in procedure:
        function = FUNCTIONS[name]
        arguments = inspect.signature(function).parameters
        result = function(**{k: (result if k == "amount" else params[k]) for k in arguments})
    return result


class ShopTools:
    """The shop task family: tasks, tools, and episodes of a scripted agent.

    The agent knows to start with `price`; unguided it guesses the rest of the procedure
    (0-2 more tools, each fed the previous result as `amount`), so it solves a task with
    probability 1/13. Given a procedure it follows it.

    >>> family = ShopTools(seed=0)
    >>> task = family.tasks(1)[0]
    >>> family.episode(task, KINDS[task.metadata["kind"]][1]).total_reward
    1.0
    """

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.tools = {f.__name__: ToolSpec.from_function(f) for f in FUNCTIONS.values()}

    def tasks(self, count: int, *, prefix: str = "shop") -> list[Task]:
        """`count` tasks, kinds in turn, arguments drawn at random."""
        out = []
        for i in range(count):
            kind = list(KINDS)[i % len(KINDS)]
            template, procedure = KINDS[kind]
            params = {
                "item": str(self.rng.choice(list(PRICES))),
                "currency": str(self.rng.choice(list(RATES))),
                "region": str(self.rng.choice(list(TAXES))),
                "code": str(self.rng.choice(list(COUPONS))),
            }
            gold = run_procedure(procedure, params)
            out.append(
                Task(
                    f"{prefix}/{i}",
                    template.format(**params),
                    gold,
                    "synthetic",
                    {"kind": kind, "params": params},
                )
            )
        return out

    def guess(self) -> tuple[str, ...]:
        """An unguided agent's procedure."""
        rest = self.rng.choice(["convert", "tax", "discount"], size=int(self.rng.integers(0, 3)))
        return ("price", *(str(name) for name in rest))

    def episode(self, task: Task, procedure: tuple[str, ...] | None = None) -> Trajectory:
        """One episode: the agent calls `procedure` (or a guess) and answers the last result."""
        procedure = procedure or self.guess()
        params = task.metadata["params"]
        messages = [Message("user", task.prompt)]
        result: float | None = None
        for number, name in enumerate(procedure):
            tool = self.tools[name]
            wanted = tool.parameters["properties"]
            arguments = {k: (result if k == "amount" else params[k]) for k in wanted}
            call = ToolCall(name, arguments, id=f"call{number}")
            result = tool(**arguments)
            messages += [
                Message("assistant", "", (call,)),
                Message("tool", str(result), tool_call_id=call.id, name=name),
            ]
        correct = result is not None and abs(result - task.gold) < 1e-9
        messages.append(Message("assistant", f"The answer is {result}."))
        step = Step(
            f"The answer is {result}.",
            "correct" if correct else "wrong",
            float(correct),
            True,
            False,
            {"correct": correct},
        )
        return Trajectory("synthetic/shop", task.id, task.prompt, [step], messages)
