"""Tree rollouts: branch episodes at turn boundaries, then value every step from its subtree.

The runner branches an episode when Control's `after_step` asks for it (`BranchAt` says how
many copies after which turn); the copies share the prefix and continue independently. After
the run, `build_tree` rebuilds the tree of one task's trajectories from their shared action
prefixes, and `tree_advantages` turns leaf outcomes into step-level advantages:

- "treerl" (Hou et al. 2025, TreeRL §3.2): V(s) = mean outcome of the leaves under node s;
  the step's advantage is (V(s) - V(root)) + (V(s) - V(parent)) — global plus local —
  divided by sqrt(|leaves under s|), so nodes shared by many leaves are not over-counted.
- "treerpo" (Yang et al. 2025, TreeRPO): GRPO within each set of siblings:
  (V(s) - mean(V(siblings))) / (std(V(siblings)) + eps); an only child, or siblings of equal
  value, get 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gfcr.core import Trajectory
from gfcr.errors import ConfigError, UnknownNameError

TREE_ESTIMATORS = ("treerl", "treerpo")


@dataclass(frozen=True)
class BranchAt:
    """Branch a live episode into `turns[t]` extra copies right after its turn t.

    >>> from gfcr.core import Step
    >>> t = Trajectory("e", "t", "?", [Step("a", "o", 0.0, False, False)])
    >>> BranchAt({1: 3}).branches(t), BranchAt({2: 3}).branches(t)
    (3, 0)
    """

    turns: Mapping[int, int]

    def __post_init__(self) -> None:
        bad = {t: n for t, n in self.turns.items() if t < 1 or n < 0}
        if bad:
            raise ConfigError(f"BranchAt needs turns >= 1 and copies >= 0, got {bad}")

    def branches(self, trajectory: Trajectory) -> int:
        return self.turns.get(len(trajectory.steps), 0)


@dataclass
class Node:
    """A prefix of actions: the trajectories (leaves) through it and its children by next action."""

    depth: int
    leaves: list[float] = field(default_factory=list)  # outcomes of the trajectories below
    children: dict[str, Node] = field(default_factory=dict)

    @property
    def value(self) -> float:
        """Monte Carlo value of the prefix: the mean outcome below it."""
        return float(np.mean(self.leaves))


def build_tree(
    trajectories: Sequence[Trajectory], outcome: Callable[[Trajectory], float] | None = None
) -> Node:
    """The prefix tree of one task's trajectories (root = the prompt, depth t = after turn t).

    >>> from gfcr.core import Step
    >>> def traj(*actions, reward):
    ...     steps = [Step(a, "", 0.0, False, False) for a in actions]
    ...     steps[-1].reward = reward
    ...     return Trajectory("e", "t", "?", steps)
    >>> root = build_tree([traj("a", "x", reward=1.0), traj("a", "y", reward=0.0),
    ...                    traj("b", "z", reward=0.0)])
    >>> root.value, root.children["a"].value, len(root.children["a"].children)
    (0.3333333333333333, 0.5, 2)
    """
    outcome = outcome or (lambda t: t.total_reward)
    root = Node(0)
    for trajectory in trajectories:
        value = float(outcome(trajectory))
        node = root
        node.leaves.append(value)
        for step in trajectory.steps:
            node = node.children.setdefault(step.action, Node(node.depth + 1))
            node.leaves.append(value)
    return root


def tree_advantages(
    trajectories: Sequence[Trajectory],
    estimator: str = "treerl",
    *,
    outcome: Callable[[Trajectory], float] | None = None,
    eps: float = 1e-6,
) -> dict[str, list[float]]:
    """Per-step advantages of each trajectory (by id) from the tree of their shared prefixes.

    >>> from gfcr.core import Step
    >>> def traj(tid, *actions, reward):
    ...     steps = [Step(a, "", 0.0, False, False) for a in actions]
    ...     steps[-1].reward = reward
    ...     return Trajectory("e", "t", "?", steps, id=tid)
    >>> group = [traj("1", "a", "x", reward=1.0), traj("2", "a", "y", reward=0.0),
    ...          traj("3", "b", "z", reward=0.0)]
    >>> {k: [round(x, 3) for x in v] for k, v in tree_advantages(group, "treerl").items()}
    {'1': [0.236, 1.167], '2': [0.236, -0.833], '3': [-0.667, -0.333]}
    """
    if estimator not in TREE_ESTIMATORS:
        raise UnknownNameError("tree advantage estimator", estimator, TREE_ESTIMATORS)
    root = build_tree(trajectories, outcome)
    out = {}
    for trajectory in trajectories:
        advantages, parent = [], root
        for step in trajectory.steps:
            node = parent.children[step.action]
            if estimator == "treerl":
                a = (node.value - root.value) + (node.value - parent.value)
                advantages.append(a / math.sqrt(len(node.leaves)))
            else:
                siblings = np.array([child.value for child in parent.children.values()])  # (n_siblings,)
                if siblings.size < 2 or np.ptp(siblings) == 0.0:  # no spread among siblings: no signal
                    advantages.append(0.0)
                else:
                    advantages.append(float((node.value - siblings.mean()) / (siblings.std(ddof=1) + eps)))
            parent = node
        out[trajectory.id] = advantages
    return out
