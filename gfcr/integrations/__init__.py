"""gfcr's envs inside other libraries' training and evaluation loops.

- `gfcr.integrations.trl`: TRL's `GRPOTrainer` (`environment_factory`, `rollout_func`, `dataset`).
- `gfcr.integrations.verifiers`: `load_environment` for `verifiers` (prime-rl, `vf-eval`).
- `gfcr.integrations.verl`: `GfcrAgentLoop` and its dataset for veRL's trainer.

The OpenEnv protocol (any trainer that speaks it) is `gfcr.remote`.
"""
