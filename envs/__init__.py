"""gfcr's environments: one sub-package per family, all `gymnasium.Env[str, str]` (see `base`)."""
