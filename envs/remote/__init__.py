"""`gfcr/Remote-v0`: any OpenEnv server as a gfcr env (the client side of `gfcr.remote`)."""

from gfcr.envs.remote.env import URL_VARIABLE, RemoteEnv

__all__ = ["URL_VARIABLE", "RemoteEnv"]
