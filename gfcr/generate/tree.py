"""Tree rollouts: branch episodes, then value every shared prefix from the outcomes below it.

The runner branches an episode when Control asks for it (`BranchAt`: copies after a turn; token
branching: children that continue from the first k tokens of their parent's turn); the copies
share the prefix and continue independently. After the run, one task's trajectories are rebuilt
into the tree of their shared prefixes, and leaf outcomes become advantages:

- per step: `build_tree` (a node per turn, children by action) and `tree_advantages`;
- per token: `build_token_tree`, a radix tree over the token sequences (a node is a maximal run of
  tokens shared by the same trajectories; observation tokens are part of the path, so a different
  observation is a different child), and `token_tree_advantages`, one per completion token: the
  advantage of the node the token lies in. The trainer's losses take these.

Both levels use the same estimators (`_node_advantage`), with V(s) = the mean outcome of the
leaves under node s (its Monte Carlo value):

- "treerl" (Hou et al. 2025, TreeRL §3.2): (V(s) - V(root)) + (V(s) - V(parent)) — global plus
  local — divided by sqrt(|leaves under s|), so nodes shared by many leaves are not over-counted.
- "treerpo" (Yang et al. 2025, TreeRPO): GRPO within each set of siblings:
  (V(s) - mean(V(siblings))) / (std(V(siblings)) + eps); an only child, or siblings of equal
  value, get 0.

Independent samples of a prompt share at most a common start; merging it is correct (its value
is the mean of all the leaves, so a start every leaf shares gets advantage 0).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from gfcr.core import Trajectory
from gfcr.errors import ConfigError, UnknownNameError

TREE_ESTIMATORS = ("treerl", "treerpo")
Outcome = Callable[[Trajectory], float]


@dataclass(frozen=True)
class BranchAt:
    """Branch a live episode into `turns[t]` extra copies right after its turn t.

    >>> from gfcr.core import Step
    >>> t = Trajectory("e", "t", "x", [Step("a", "o", 0.0, False, False)])
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
    """A shared prefix: the outcomes of the trajectories (leaves) through it, and its children by
    what comes next (the next action in `build_tree`, the next token id in `build_token_tree`).

    `depth` is the prefix's length (turns, or tokens); a node covers `depth - parent.depth` of them.
    """

    depth: int
    leaves: list[float] = field(default_factory=list)  # outcomes of the trajectories below
    children: dict[Hashable, Node] = field(default_factory=dict)

    @property
    def value(self) -> float:
        """Monte Carlo value of the prefix: the mean outcome below it."""
        return float(np.mean(self.leaves))


def build_tree(trajectories: Sequence[Trajectory], outcome: Outcome | None = None) -> Node:
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
    outcome = outcome or (lambda t: t.reward)
    root = Node(0)
    for trajectory in trajectories:
        value = float(outcome(trajectory))
        node = root
        node.leaves.append(value)
        for step in trajectory.steps:
            node = node.children.setdefault(step.action, Node(node.depth + 1))
            node.leaves.append(value)
    return root


def build_token_tree(trajectories: Sequence[Trajectory], outcome: Outcome | None = None) -> Node:
    """The radix tree of one task's trajectories over their tokens, `prompt_ids + completion_ids`
    (so trajectories whose guidance changed the prompt part there). Children are keyed by their
    first token; a trajectory without token data is a leaf of the root.

    >>> from gfcr.core import Step, TokenData
    >>> def traj(completion, reward):
    ...     n = len(completion)
    ...     return Trajectory("e", "t", "?", [Step("", "", reward, True, False)],
    ...                       tokens=TokenData([7], completion, [1] * n, [0.0] * n))
    >>> root = build_token_tree([traj([1, 2, 3], 1.0), traj([1, 2, 4], 0.0), traj([5, 6], 0.0)])
    >>> prompt = root.children[7]  # every leaf shares the prompt
    >>> shared = prompt.children[1]  # tokens 1, 2: two leaves
    >>> prompt.depth, shared.depth, shared.value, list(shared.children), prompt.children[5].depth
    (1, 3, 0.5, [3, 4], 3)
    """
    outcome = outcome or (lambda t: t.reward)
    paths = [_token_path(t) for t in trajectories]
    values = [float(outcome(t)) for t in trajectories]
    root = Node(0, values)
    todo = [(root, list(range(len(paths))))]  # a node and the leaves (indices) through it
    while todo:
        node, members = todo.pop()
        by_token = defaultdict(list)
        for i in members:
            if len(paths[i]) > node.depth:  # the others end here
                by_token[paths[i][node.depth]].append(i)
        for token, group in by_token.items():
            child = Node(_shared_run_end(paths, group, node.depth), [values[i] for i in group])
            node.children[token] = child
            todo.append((child, group))
    return root


def tree_advantages(
    trajectories: Sequence[Trajectory],
    estimator: str = "treerl",
    *,
    outcome: Outcome | None = None,
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
    _check_estimator(estimator)
    root = build_tree(trajectories, outcome)
    return {t.id: _path_advantages(root, [s.action for s in t.steps], estimator, eps) for t in trajectories}


def token_tree_advantages(
    trajectories: Sequence[Trajectory],
    estimator: str = "treerl",
    *,
    outcome: Outcome | None = None,
    eps: float = 1e-6,
) -> dict[str, list[float]]:
    """Per-token advantages of each trajectory (by id), aligned with its `tokens.completion_ids`:
    each token gets the advantage of the `build_token_tree` node it lies in, and 0.0 where its
    `loss_mask` is 0 (observation tokens place a trajectory in the tree but are never trained on).
    A trajectory without token data gets [].

    >>> from gfcr.core import Step, TokenData
    >>> def traj(tid, completion, reward):
    ...     n = len(completion)
    ...     return Trajectory("e", "t", "?", [Step("", "", reward, True, False)], id=tid,
    ...                       tokens=TokenData([7], completion, [1] * n, [0.0] * n))
    >>> group = [traj("1", [1, 2, 3], 1.0), traj("2", [1, 2, 4], 0.0), traj("3", [5, 6], 0.0)]
    >>> {k: [round(a, 3) for a in v] for k, v in token_tree_advantages(group, "treerl").items()}
    {'1': [0.236, 0.236, 1.167], '2': [0.236, 0.236, -0.833], '3': [-0.667, -0.667]}
    """
    _check_estimator(estimator)
    root = build_token_tree(trajectories, outcome)
    out: dict[str, list[float]] = {}
    for t in trajectories:
        if t.tokens is None:
            out[t.id] = []
            continue
        along = _path_advantages(root, _token_path(t), estimator, eps)[len(t.tokens.prompt_ids) :]
        out[t.id] = [a if m else 0.0 for a, m in zip(along, t.tokens.loss_mask, strict=True)]
    return out


def _check_estimator(estimator: str) -> None:
    if estimator not in TREE_ESTIMATORS:
        raise UnknownNameError("tree advantage estimator", estimator, TREE_ESTIMATORS)


def _token_path(trajectory: Trajectory) -> list[int]:
    tokens = trajectory.tokens
    return [] if tokens is None else tokens.prompt_ids + tokens.completion_ids


def _shared_run_end(paths: Sequence[Sequence[int]], group: Sequence[int], start: int) -> int:
    """The end of the longest run from `start` over which every path of `group` has the same tokens
    (they all have `paths[i][start]`, and agree on it)."""
    first, end = paths[group[0]], start + 1
    while end < len(first) and all(len(paths[i]) > end and paths[i][end] == first[end] for i in group):
        end += 1
    return end


def _path_advantages(root: Node, path: Sequence[Hashable], estimator: str, eps: float) -> list[float]:
    """One advantage per element of a leaf's `path` (its actions, or tokens): its node's."""
    out: list[float] = []
    parent = root
    while len(out) < len(path):
        node = parent.children[path[len(out)]]
        out += [_node_advantage(node, parent, root, estimator, eps)] * (node.depth - parent.depth)
        parent = node
    return out


def _node_advantage(node: Node, parent: Node, root: Node, estimator: str, eps: float) -> float:
    """The advantage of prefix `node`, a child of `parent`, in the tree under `root` (see above)."""
    if estimator == "treerl":
        return ((node.value - root.value) + (node.value - parent.value)) / math.sqrt(len(node.leaves))
    siblings = np.array([child.value for child in parent.children.values()])  # (n_siblings,)
    if siblings.size < 2 or np.ptp(siblings) == 0.0:  # no spread among siblings: no signal
        return 0.0
    return float((node.value - siblings.mean()) / (siblings.std(ddof=1) + eps))
