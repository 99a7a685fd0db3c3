"""gfcr's envs inside TRL's `GRPOTrainer` (TRL >= 1.16): `dataset`, `environment_factory`, `rollout_func`.

Two ways in, over one dataset of prompts (`dataset(env_id)`: chat messages with `task_id`,
`env_id` and `env_kwargs` columns):

- `environment_factory(env_id)`: TRL generates and runs its own tool loop; each of the env's tools
  is a method of the returned class, stepped through the gfcr env, and `get_reward()` is gfcr's
  verdict. Pass `reward_funcs=final_answer` so the model's last text answer is stepped too.
- `rollout_func(env_id, config=RECIPE)`: each TRL batch is one step of gfcr's rollout pipeline
  (`gfcr.trainers.pipeline`), the same object `gfcr train` runs, configured by the same recipe
  sections; episodes are played with the trainer's current weights, multi-turn and
  token-in-token-out (observation tokens get `env_mask` 0). Pass `reward_funcs=env_reward`.
  A recipe that grows trees or scores steps (`[judge.process]`) trains with `TreeGRPOTrainer`
  (each token credited by its tree node, plus its step's process advantage). Envs that show
  images train a vision-language model (its processor as `processing_class`) with
  `VisionGRPOTrainer`, whose every forward pass gets the episodes' pixels.

    from trl import GRPOConfig, GRPOTrainer
    from gfcr.integrations import trl as gfcr_trl

    trainer = GRPOTrainer(
        model=path,
        args=GRPOConfig(output_dir="out", num_generations=4, max_steps=10),
        train_dataset=gfcr_trl.dataset("gfcr/ToolUse-v0", n=64),
        rollout_func=gfcr_trl.rollout_func("gfcr/ToolUse-v0"),
        reward_funcs=gfcr_trl.env_reward,
    )
    trainer.train()

The module imports neither TRL nor `datasets` until they are needed (`pip install -e '.[trl]'`).
One module per way in: `dataset.py`, `environment.py` (`environment_factory`, `final_answer`),
`rollout.py` (`rollout_func`, `env_reward`); `vision.py` (`VisionGRPOTrainer`) and `tree.py`
(`TreeGRPOTrainer`), loaded on first use: they import TRL.
"""

from typing import Any

from gfcr.integrations.trl.dataset import dataset
from gfcr.integrations.trl.environment import GfcrEnvironment, environment_factory, final_answer
from gfcr.integrations.trl.rollout import GfcrRollout, env_reward, rollout_func

__all__ = [
    "GfcrEnvironment",
    "GfcrRollout",
    "TreeGRPOTrainer",
    "VisionGRPOTrainer",
    "dataset",
    "env_reward",
    "environment_factory",
    "final_answer",
    "rollout_func",
]


def __getattr__(name: str) -> Any:
    # TRL subclasses: TRL is imported only when one is asked for
    if name == "TreeGRPOTrainer":
        from gfcr.integrations.trl.tree import TreeGRPOTrainer

        return TreeGRPOTrainer
    if name == "VisionGRPOTrainer":
        from gfcr.integrations.trl.vision import VisionGRPOTrainer

        return VisionGRPOTrainer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
