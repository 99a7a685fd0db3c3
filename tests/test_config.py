"""Settings declared once (`gfcr.core.config`): help text on every field, tables built from them."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from gfcr.agents import RunnerConfig, SamplingParams
from gfcr.core.config import from_dict, setting, settings, to_dict
from gfcr.errors import ConfigError


@pytest.mark.parametrize("cls", [SamplingParams, RunnerConfig])
def test_every_setting_declares_its_help_text(cls):
    assert all(s.help.strip() for s in settings(cls))


def test_runner_table_holds_the_sampling_settings_flat_except_those_the_runner_sets():
    names = [s.name for s in settings(RunnerConfig)]
    assert {"max_tokens", "temperature", "top_p", "stop", "concurrency", "max_episode_tokens"} <= set(names)
    assert "n" not in names and "seed" not in names and "sampling" not in names  # per episode, the runner's
    config = from_dict(RunnerConfig, {"max_tokens": 64, "stop": ["</answer>"], "max_turns": 3})
    assert config == RunnerConfig(max_turns=3, sampling=SamplingParams(max_tokens=64, stop=("</answer>",)))
    assert from_dict(RunnerConfig, to_dict(config)) == config


def test_bad_tables_are_errors_that_name_the_key_and_the_known_ones():
    with pytest.raises(ConfigError, match="did you mean 'max_tokens'") as error:
        from_dict(RunnerConfig, {"max_tokenz": 64}, "runner")
    assert all(s.name in str(error.value) for s in settings(RunnerConfig))
    with pytest.raises(ConfigError, match=r"^\[runner\] temperature must be >= 0"):
        from_dict(RunnerConfig, {"temperature": -1.0}, "runner")
    with pytest.raises(ConfigError, match=r"\[runner\] must be a table, got int"):
        from_dict(RunnerConfig, 3, "runner")  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Eval:
    episodes: int = setting(64, "Episodes per evaluation.")
    every: int = setting(0, "Evaluate every N steps.")


@dataclass(frozen=True)
class _Train:
    eval: _Eval = setting(default_factory=_Eval, help="Evaluation.", exclude=("episodes",))


def test_a_sub_table_leaves_out_the_settings_its_parent_fills_in():
    with pytest.raises(ConfigError, match=r"\[eval\]: unknown key 'episodes'"):
        from_dict(_Train, {"eval": {"episodes": 8}})
    assert from_dict(_Train, {"eval": {"every": 2}}).eval == _Eval(every=2)
    assert to_dict(_Train()) == {"eval": {"every": 0}}
    assert from_dict(_Train, to_dict(_Train(_Eval(every=3)))) == _Train(_Eval(every=3))
