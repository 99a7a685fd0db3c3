"""The vectorized runner: many episodes over many envs at once, with continuous batching.

- `Runner` and `RunnerConfig` (`runner.py`): the event loop, its limits and fault isolation;
- `episodes_for_env`, `episodes_for_suite` (`specs.py`): which episodes to run;
- `rollout` (`rollout.py`): one episode, in order, in an env you hold;
- the engine's parts: `batcher.py` (continuous batching of policy calls), `env_host.py` and
  `env_pools.py` (envs stepped in threads or processes), `ray_backend.py` (env workers as Ray
  actors), `episode.py` (one episode's state, token-in-token-out), `writer.py` (JSONL output),
  `outages.py` (places that keep failing taken out of service), `progress.py`, `threads.py`.
"""

from gfcr.agents.runner.rollout import rollout
from gfcr.agents.runner.runner import Runner, RunnerConfig, RunResult
from gfcr.agents.runner.specs import env_config, episodes_for_env, episodes_for_suite

__all__ = [
    "RunResult",
    "Runner",
    "RunnerConfig",
    "env_config",
    "episodes_for_env",
    "episodes_for_suite",
    "rollout",
]
