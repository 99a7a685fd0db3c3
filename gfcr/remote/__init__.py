"""gfcr's envs over the OpenEnv protocol, both ways.

- `serve_env(env_id, **kwargs)` / `gfcr serve-env ENV_ID`: serve any registered env to any
  OpenEnv client (openenv's `GenericEnvClient`, `MCPToolClient`, TRL's OpenEnv examples).
- `gymnasium.make("gfcr/Remote-v0", url=...)` (`RemoteEnv`): use any OpenEnv server as a gfcr env.

See docs/integrations.md.
"""

from gfcr.envs.remote import RemoteEnv
from gfcr.remote.server import GymSession, TextAction, TextObservation, create_app, serve_env

__all__ = ["GymSession", "RemoteEnv", "TextAction", "TextObservation", "create_app", "serve_env"]
