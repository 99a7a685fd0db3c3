"""The difficulty curriculum (`gfcr.control.curriculum`): each category's level rises when the
policy's success passes the band, falls when it drops below, holds inside it, never leaves the
levels that exist; it restricts the candidates and composes with the selectors and the decide
loop; its state round-trips; every env family exposes its levels the one way it reads."""

from __future__ import annotations

import gymnasium as gym
import pytest

from gfcr.control import ControlConfig, RolloutController
from gfcr.control.curriculum import DifficultyCurriculum, task_difficulty
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.workloads import BernoulliPrompts


def levels(curriculum: DifficultyCurriculum) -> dict[str, int]:
    return dict(curriculum.level)


def sums(*levels: int, per_level: int = 4) -> dict[str, tuple[str, int | None]]:
    """Tasks `sum/L/I` of category "sum" at `levels`, `per_level` of each."""
    return {f"sum/{level}/{i}": ("sum", level) for level in levels for i in range(per_level)}


def groups(level: int, rewards: list[float], count: int = 2) -> dict[str, list[float]]:
    """`count` groups of tasks at `level`, each with `rewards`."""
    return {f"sum/{level}/{i}": rewards for i in range(count)}


def test_success_at_the_top_of_the_band_raises_the_level():
    curriculum = DifficultyCurriculum(sums(1, 2, 3), band=(0.2, 0.8), window=4, min_groups=2)
    curriculum.update(groups(1, [1.0, 1.0, 1.0, 0.0]))  # 0.75: inside the band
    assert levels(curriculum) == {"sum": 1}
    curriculum.update(groups(1, [1.0, 1.0, 1.0, 1.0]))  # the window's mean: (0.75 * 2 + 1 * 2) / 4 = 0.875
    assert levels(curriculum) == {"sum": 2}
    assert curriculum.metrics()["choose/curriculum/success/sum"] == 0.0  # level 2 is measured afresh


def test_success_at_the_bottom_of_the_band_lowers_the_level():
    curriculum = DifficultyCurriculum(sums(1, 2, 3), window=4, min_groups=4, start_level=3)
    curriculum.update(groups(3, [0.0, 0.0, 0.0, 1.0]))  # 0.25, but only 2 of the 4 groups it needs
    assert levels(curriculum) == {"sum": 3}
    curriculum.update(groups(3, [0.0, 0.0, 0.0, 0.0]))  # (0.25 * 2 + 0) / 4 = 0.125 <= 0.2
    assert levels(curriculum) == {"sum": 2}


def test_success_inside_the_band_holds_the_level():
    curriculum = DifficultyCurriculum(sums(1, 2, 3), window=4, min_groups=2, start_level=2)
    for _ in range(10):
        curriculum.update(groups(2, [1.0, 0.0, 1.0, 0.0]))
    assert levels(curriculum) == {"sum": 2}
    assert curriculum.metrics()["choose/curriculum/success/sum"] == 0.5


def test_levels_never_leave_those_the_tasks_have():
    """At the top, success keeps it there; at the bottom, failure; a missing level is skipped."""
    curriculum = DifficultyCurriculum(sums(1, 3), window=1, min_groups=1)  # level 2: no task
    curriculum.update(groups(1, [1.0], count=1))
    assert levels(curriculum) == {"sum": 3}
    curriculum.update(groups(3, [1.0], count=1))
    assert levels(curriculum) == {"sum": 3}
    curriculum.update(groups(3, [0.0], count=1))
    curriculum.update(groups(1, [0.0], count=1))
    assert levels(curriculum) == {"sum": 1}
    high = DifficultyCurriculum(sums(1, 2), start_level=5)  # above every level: the highest there is
    assert levels(high) == {"sum": 2}


def test_categories_move_apart_and_groups_of_other_levels_are_not_measured():
    tasks = sums(1, 2) | {f"maze/{level}/0": ("maze", level) for level in (1, 2)}
    curriculum = DifficultyCurriculum(tasks, window=1, min_groups=1)
    curriculum.update({"sum/1/0": [1.0], "maze/1/0": [0.5], "sum/2/0": [0.0]})  # sum/2: not its level yet
    assert levels(curriculum) == {"maze": 1, "sum": 2}
    assert curriculum.metrics()["choose/curriculum/level_mean"] == 1.5


def test_candidates_are_the_current_levels_and_tasks_without_one():
    curriculum = DifficultyCurriculum(sums(1, 2) | {"champ/7": ("champ", None)}, start_level=2)
    assert curriculum.candidates(["sum/1/0", "sum/2/0", "sum/2/1", "champ/7", "unknown/0"]) == [
        "sum/2/0", "sum/2/1", "champ/7", "unknown/0"
    ]  # fmt: skip
    assert curriculum.metrics()["choose/curriculum/candidates"] == 4


def bernoulli_levels(probs_by_level: dict[int, float], per_level: int = 6) -> tuple[BernoulliPrompts, dict]:
    """Synthetic prompts, `per_level` at each level, solved with that level's probability."""
    probs = [p for _, p in sorted(probs_by_level.items()) for _ in range(per_level)]
    env = BernoulliPrompts(probs, seed=0)
    level_of = [level for level in sorted(probs_by_level) for _ in range(per_level)]
    return env, {task_id: ("synthetic", level_of[i]) for i, task_id in enumerate(env.task_ids)}


@pytest.mark.parametrize("selector", ["uniform", "thompson", "greso", "vcrl", "sec"])
def test_a_selector_chooses_among_the_current_level_and_the_curriculum_finds_the_informative_one(selector):
    """Level 1 always solved, level 2 half the time, level 3 never: whatever the selector, every
    step chooses only tasks of the current level, which climbs to 2 and stays there."""
    env, difficulties = bernoulli_levels({1: 1.0, 2: 0.5, 3: 0.0})
    config = ControlConfig(
        selector=selector, num_prompts=2, group_size=8, curriculum="band", curriculum_window=2,
        curriculum_min_groups=2,
    )  # fmt: skip
    controller = RolloutController(config, difficulties=difficulties)
    chosen_levels = []
    for _ in range(6):
        batch = controller.collect(env.run, env.task_ids)
        chosen_levels.append({difficulties[t][1] for t in batch.groups})
    assert chosen_levels[0] == {1} and all(found == {2} for found in chosen_levels[1:])
    assert controller.curriculum is not None and levels(controller.curriculum) == {"synthetic": 2}


def test_groups_the_decide_loop_drops_are_measured_too():
    """Dynamic sampling drops the all-solved groups of level 1 (no spread): the curriculum still
    sees them solved, and moves up."""
    env, difficulties = bernoulli_levels({1: 1.0, 2: 0.5})
    config = ControlConfig(
        num_prompts=2, group_size=4, dynamic_sampling=True, max_rounds=2, curriculum="band",
        curriculum_window=2, curriculum_min_groups=2,
    )  # fmt: skip
    controller = RolloutController(config, difficulties=difficulties)
    batch = controller.collect(env.run, env.task_ids)
    assert not batch.groups and batch.dropped >= 2  # every level-1 group had no spread
    assert controller.curriculum is not None and levels(controller.curriculum) == {"synthetic": 2}


def test_the_runner_hook_path_restricts_and_learns_too():
    """`schedule` chooses among the current level; `observe` measures the run."""
    from gfcr.core import EnvConfig, EpisodeSpec

    env, difficulties = bernoulli_levels({1: 1.0, 2: 0.5})
    specs = [EpisodeSpec(EnvConfig("gfcr/Math-v0"), task_id) for task_id in env.task_ids]
    config = ControlConfig(num_prompts=2, group_size=4, curriculum="band", curriculum_window=2,
                           curriculum_min_groups=2)  # fmt: skip
    controller = RolloutController(config, difficulties=difficulties)
    scheduled = controller.schedule(specs)
    assert {difficulties[s.task_id][1] for s in scheduled} == {1}
    controller.observe(env.run({s.task_id: 4 for s in scheduled[::4]}))
    assert {difficulties[s.task_id][1] for s in controller.schedule(specs)} == {2}


def test_the_curriculum_state_round_trips_with_the_controller():
    env, difficulties = bernoulli_levels({1: 1.0, 2: 0.5, 3: 0.0})
    config = ControlConfig(num_prompts=2, group_size=8, curriculum="band", curriculum_window=4,
                           curriculum_min_groups=2)  # fmt: skip
    controller = RolloutController(config, difficulties=difficulties)
    for _ in range(3):
        controller.collect(env.run, env.task_ids)
    resumed = RolloutController(config, difficulties=difficulties)
    resumed.load_state_dict(controller.state_dict())
    assert resumed.curriculum is not None and controller.curriculum is not None
    assert levels(controller.curriculum) == {"synthetic": 2} and controller.curriculum.measured["synthetic"]
    assert resumed.curriculum.state_dict() == controller.curriculum.state_dict()
    assert (
        resumed.collect(env.run, env.task_ids).allocated
        == controller.collect(env.run, env.task_ids).allocated
    )


def test_the_settings_are_checked_with_clear_errors():
    with pytest.raises(UnknownNameError, match="did you mean 'band'"):
        ControlConfig(curriculum="bands")
    with pytest.raises(ConfigError, match=r"curriculum_band must be \(low, high\).*got \(0.8, 0.2\)"):
        ControlConfig(curriculum="band", curriculum_band=(0.8, 0.2))
    with pytest.raises(
        ConfigError, match=r"curriculum_min_groups must be in \[1, curriculum_window = 4\], got 5"
    ):
        ControlConfig(curriculum="band", curriculum_window=4, curriculum_min_groups=5)
    with pytest.raises(ConfigError, match="curriculum_start_level must be >= 1"):
        ControlConfig(curriculum_start_level=0)
    with pytest.raises(ConfigError, match=r"no task with a level among 2 tasks.*levels = \[1, 2, 3\]"):
        RolloutController(
            ControlConfig(curriculum="band"), difficulties={"a/0": ("a", None), "b/0": ("b", None)}
        )


def test_every_family_exposes_its_levels_the_one_way():
    """Vision kinds (category without the level), SQL's easy/medium/hard as 1/2/3."""
    vision = gym.make("gfcr/Vision-v0").unwrapped.tasks  # type: ignore[attr-defined]
    assert task_difficulty(vision.get("vision/maze/3/0")) == ("vision/maze", 3)
    sql = gym.make("gfcr/SQL-v0").unwrapped.tasks  # type: ignore[attr-defined]
    found = {task_difficulty(sql[i]) for i in range(len(sql))}
    assert {level for _, level in found} == {1, 2, 3} and {"chinook", "tau2_airline"} <= {c for c, _ in found}
    assert all(
        task_difficulty(sql[i])[1] == {"easy": 1, "medium": 2, "hard": 3}[sql[i].metadata["difficulty"]]
        for i in range(len(sql))
    )
