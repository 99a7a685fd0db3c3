"""reasoning-gym tasks at difficulty levels (`reasoning_gym_source(levels=...)`): each level is
built from the generator's own curriculum, harder as it rises; ids are stable and found; the ids
without levels are unchanged; a training pool over levels holds every level."""

from __future__ import annotations

import pytest
import reasoning_gym

from gfcr.agents import episodes_for_env
from gfcr.control.curriculum import task_difficulty
from gfcr.envs.math.data import reasoning_gym_source
from gfcr.errors import ConfigError


def test_higher_levels_give_more_terms_and_digits():
    source = reasoning_gym_source(["chain_sum"], size=20, levels=[1, 2, 3])
    shape = {}
    for task in source:
        meta = task.metadata["entry"]["metadata"]
        shape.setdefault(task.metadata["level"], set()).add((meta["num_terms"], meta["num_digits"]))
    assert shape == {1: {(2, 1)}, 2: {(3, 2)}, 3: {(4, 3)}}


def test_level_ids_are_stable_found_and_carry_the_category():
    source = reasoning_gym_source(["chain_sum", "products"], size=5, levels=[1, 2])
    again = reasoning_gym_source(["chain_sum", "products"], size=5, levels=[1, 2])
    ids = source.ids()
    assert len(ids) == len(set(ids)) == 20 and ids[5] == "rg/chain_sum/2/0" and ids[10] == "rg/products/1/0"
    assert all(source.index_of(task_id) == i for i, task_id in enumerate(ids))
    assert [t.prompt for t in source] == [again.get(task_id).prompt for task_id in ids]
    assert task_difficulty(source.get("rg/products/2/3")) == ("rg/products", 2)
    assert source.index_of("rg/chain_sum/3/0") is None and source.index_of("rg/chain_sum/0") is None


def test_ids_without_levels_are_unchanged():
    source = reasoning_gym_source(["chain_sum"], size=5)
    dataset = reasoning_gym.create_dataset("chain_sum", size=5, seed=0)
    assert source.ids() == [f"rg/chain_sum/{i}" for i in range(5)]
    assert [t.prompt for t in source] == [dataset[i]["question"] for i in range(5)]
    assert (
        task_difficulty(source[0]) == ("rg/chain_sum", None) and source.index_of("rg/chain_sum/1/0") is None
    )


def test_a_training_pool_over_levels_holds_every_level():
    kwargs = {"dataset": "reasoning_gym", "generators": ["chain_sum", "products"], "levels": [1, 2, 3]}
    pool = episodes_for_env("gfcr/Math-v0", 24, kwargs=kwargs, pool=24)
    assert {(spec.task_id.split("/")[1], spec.task_id.split("/")[2]) for spec in pool} == {
        (name, level) for name in ("chain_sum", "products") for level in "123"
    }


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"generators": ["chain_sum", "acre"], "levels": [1]}, "these have none: acre; leave them out"),
        (
            {"generators": ["chain_sum"], "levels": [1, 12]},
            r"chain_sum has levels 1 to 11, got levels = \[1, 12\]",
        ),
        ({"generators": ["chain_sum"], "levels": [2, 2]}, "levels must be distinct"),
        (
            {
                "generators": ["chain_sum"],
                "levels": [1],
                "generator_config": {"max_terms": 3, "allow_negation": True},
            },
            "generator_config sets max_terms, which levels set for chain_sum",
        ),
    ],
)
def test_bad_levels_are_refused_with_the_reason(options, message):
    with pytest.raises(ConfigError, match=message):
        reasoning_gym_source(size=2, **options)


def test_generator_config_sets_the_options_no_level_sets():
    source = reasoning_gym_source(
        ["chain_sum"], size=30, levels=[1], generator_config={"allow_negation": True}
    )
    assert any("-" in t.metadata["entry"]["metadata"]["expression"].split()[0] for t in source)
