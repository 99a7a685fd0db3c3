"""Difficulty curricula: each category's tasks at the level the policy is learning from.

Envs expose difficulty one way: `Task.metadata["level"]` (an int, 1 = easiest) and a category,
`Task.metadata["category"]` or else `task_category(task.id)` — `task_difficulty` reads both, for
every family (reasoning-gym with `levels`, `gfcr/Vision-v0` kinds, SQL and SWE easy/medium/hard).

`DifficultyCurriculum` keeps a current level per category and measures the policy's success there
over its last groups. Groups solve too often (at or above the band's top): the category moves up a
level; too rarely (at or below its bottom): down — so training stays in the informative band,
neither always solved nor never (the self-evolving curricula of reasoning-gym's coaching and of
SEC, Chen et al. 2025, by a plain success band). It only restricts the candidates: a selector
(uniform, GRESO, VCRL, Thompson, SEC) then chooses among tasks at the current levels, and tasks
without a level pass through.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from gfcr.control.selection import task_category
from gfcr.core import SUCCESS_REWARD, Task, solved
from gfcr.errors import ConfigError

Difficulty = tuple[str, int | None]  # (category, level); level None: a task the curriculum passes through


def task_difficulty(task: Task) -> Difficulty:
    """A task's category and level (None without one), as every env exposes them.

    >>> task_difficulty(Task("vision/maze/2/7", "?", "", metadata={"category": "vision/maze", "level": 2}))
    ('vision/maze', 2)
    >>> task_difficulty(Task("mmath/AIME2024/3", "?", ""))
    ('mmath/AIME2024', None)
    """
    level = task.metadata.get("level")
    category = task.metadata.get("category") or task_category(task.id)
    return str(category), level if isinstance(level, int) else None


def check_settings(band: Sequence[float], window: int, min_groups: int, start_level: int) -> None:
    """Raise `ConfigError` naming the first bad curriculum setting."""
    low, high = band
    if not 0.0 <= low < high <= 1.0:
        raise ConfigError(f"curriculum_band must be (low, high) with 0 <= low < high <= 1, got {tuple(band)}")
    if window < 1:
        raise ConfigError(f"curriculum_window must be >= 1 (groups), got {window}")
    if not 1 <= min_groups <= window:
        raise ConfigError(
            f"curriculum_min_groups must be in [1, curriculum_window = {window}], got {min_groups}"
        )
    if start_level < 1:
        raise ConfigError(f"curriculum_start_level must be >= 1 (1: the easiest), got {start_level}")


class DifficultyCurriculum:
    """Raises or lowers each category's level from the success measured there.

    `difficulties` maps each task id to its (category, level). A category starts at its lowest
    level at or above `start_level` (its highest, if none is). Each group of a task at its
    category's current level adds its share of successes (rewards >= `success_at`) to the
    category's window of the last `window` groups; once it holds `min_groups`, a mean at or above
    `band[1]` moves the category to its next harder level, at or below `band[0]` to its next
    easier one (never beyond the levels its tasks have), and the window starts over.

    >>> tasks = {f"q{level}.{i}": ("sum", level) for level in (1, 2, 3) for i in range(4)}
    >>> curriculum = DifficultyCurriculum(tasks, window=2, min_groups=2)
    >>> curriculum.candidates(["q1.0", "q2.0", "other"])
    ['q1.0', 'other']
    >>> curriculum.update({"q1.0": [1.0, 1.0], "q1.1": [1.0, 0.0]})  # success 0.75: inside the band
    >>> curriculum.update({"q1.2": [1.0, 1.0], "q1.3": [1.0, 1.0]})  # the last two groups: all solved
    >>> curriculum.level["sum"]
    2
    """

    def __init__(
        self,
        difficulties: Mapping[str, Difficulty],
        band: tuple[float, float] = (0.2, 0.8),
        window: int = 8,
        min_groups: int = 4,
        start_level: int = 1,
        success_at: float = SUCCESS_REWARD,
    ) -> None:
        check_settings(band, window, min_groups, start_level)
        self.difficulties = dict(difficulties)
        self.band, self.window, self.min_groups, self.success_at = band, window, min_groups, success_at
        levels: dict[str, set[int]] = {}
        for category, level in self.difficulties.values():
            if level is not None:
                levels.setdefault(category, set()).add(level)
        if not levels:
            raise ConfigError(
                f"the curriculum found no task with a level among {len(self.difficulties)} tasks "
                "(Task.metadata['level']); use an env that sets one (gfcr/Vision-v0, gfcr/SQL-v0, "
                "gfcr/Math-v0 with dataset = 'reasoning_gym' and levels = [1, 2, 3]) or curriculum = 'none'"
            )
        self.levels = {category: sorted(found) for category, found in sorted(levels.items())}  # ascending
        self.level = {
            category: next((n for n in found if n >= start_level), found[-1])
            for category, found in self.levels.items()
        }
        self.measured: dict[str, deque[float]] = {c: deque(maxlen=window) for c in self.levels}
        self.offered = 0  # candidates the last restriction kept

    def at_level(self, task_id: str) -> bool:
        """Whether the task is at its category's current level (or has no level, or is unknown)."""
        category, level = self.difficulties.get(task_id, ("", None))
        return level is None or self.level[category] == level

    def candidates(self, task_ids: Sequence[str]) -> list[str]:
        """The task ids a step may choose from: those at their category's current level, and those
        without a level."""
        kept = [t for t in task_ids if self.at_level(t)]
        self.offered = len(kept)
        return kept

    def update(self, rewards: Mapping[str, Sequence[float]]) -> None:
        """Measure each group's success (task id -> its rewards) at its category's current level,
        then move each category whose window leaves the band. Groups of other levels are ignored."""
        moved: set[str] = set()
        for task_id, group in rewards.items():
            category, level = self.difficulties.get(task_id, ("", None))
            if level is not None and group and self.at_level(task_id):
                self.measured[category].append(float(np.mean([solved(r, self.success_at) for r in group])))
                moved.add(category)
        for category in sorted(moved):
            self._move(category)

    def _move(self, category: str) -> None:
        window = self.measured[category]
        if len(window) < self.min_groups:
            return
        success, levels = float(np.mean(window)), self.levels[category]
        position = levels.index(self.level[category])
        step = 1 if success >= self.band[1] else -1 if success <= self.band[0] else 0
        if step and 0 <= position + step < len(levels):
            self.level[category] = levels[position + step]
            window.clear()  # the new level is measured afresh

    def metrics(self) -> dict[str, float]:
        """`choose/curriculum/...`: the mean current level, the candidates kept last, and each
        category's level and measured success (0 until a group is measured at its level)."""
        metrics = {
            "choose/curriculum/level_mean": float(np.mean(list(self.level.values()))),
            "choose/curriculum/candidates": float(self.offered),
        }
        for category, level in self.level.items():
            window = self.measured[category]
            metrics[f"choose/curriculum/level/{category}"] = float(level)
            metrics[f"choose/curriculum/success/{category}"] = float(np.mean(window)) if window else 0.0
        return metrics

    def state_dict(self) -> dict[str, Any]:
        """Each category's current level and measured window, as plain data."""
        return {"level": dict(self.level), "measured": {c: list(w) for c, w in self.measured.items()}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from `state_dict()`'s output; categories the pool no longer has are dropped."""
        for category, level in state["level"].items():
            if category in self.levels and level in self.levels[category]:
                self.level[category] = int(level)
                self.measured[category] = deque(state["measured"][category], maxlen=self.window)
