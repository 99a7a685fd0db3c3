"""gfcr's envs over the OpenEnv protocol, both ways.

- `serve_env(env_id, **kwargs)` / `gfcr serve-env ENV_ID`: serve any registered env to any
  OpenEnv client (openenv's `GenericEnvClient`, `MCPToolClient`, TRL's OpenEnv examples), and
  `gfcr serve-env ENV_ID --write-deployment DIR` (`write_deployment`): its Dockerfile and
  `openenv.yaml`, to ship it as OpenEnv envs ship.
- `GfcrEnvClient`: openenv's typed client for such a server (`TextAction` in, `GfcrObservation` out).
- `gymnasium.make("gfcr/Remote-v0", url=...)` (`RemoteEnv`): use any OpenEnv server as a gfcr env.

See docs/integrations.md.
"""

from gfcr.envs.remote import RemoteEnv
from gfcr.remote.client import GfcrEnvClient, GfcrObservation
from gfcr.remote.deployment import write_deployment
from gfcr.remote.server import GymSession, NativeToolCall, TextAction, TextObservation, create_app, serve_env

__all__ = [
    "GfcrEnvClient",
    "GfcrObservation",
    "GymSession",
    "NativeToolCall",
    "RemoteEnv",
    "TextAction",
    "TextObservation",
    "create_app",
    "serve_env",
    "write_deployment",
]
