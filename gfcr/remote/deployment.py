"""`gfcr serve-env ENV_ID ... --write-deployment DIR`: the env as OpenEnv envs ship, a Docker image.

`write_deployment` writes into DIR:

- `Dockerfile`: gfcr (and the `requirements`, e.g. a plugin env's package) installed into a venv
  at /opt/gfcr; the container runs as an unprivileged user and serves the env with the very
  `gfcr serve-env` command given (its env keywords, `--import`s and limits) on
  `0.0.0.0:$PORT`, with a `HEALTHCHECK` on `/health`. A bearer token is never written into the
  image: the server reads it from `GFCR_SERVE_TOKEN` when the container starts.
- `openenv.yaml`: the OpenEnv manifest (name, version, port); with `README.md` (how to build and
  run it, a Docker Space's front matter), `pyproject.toml`, `__init__.py` and `client.py` (the env's
  typed client: gfcr's `GfcrEnvClient`) the directory is laid out as `openenv push DIR` expects.
- `wheels/`, with `wheelhouse`: the wheels gfcr and its dependencies install from, with no package
  index, for build machines without network (made with `pip wheel 'gfcr[remote]' pip -w WHEELS`;
  pip runs from its own wheel, so the base image needs no pip). Without it the image installs
  `gfcr[remote]` from PyPI.

The base image is a build argument (`python:3.11-slim` by default): any Debian-like image with
Python >= 3.11 and `useradd` (and `ensurepip` when installing from PyPI).

>>> import tempfile
>>> from pathlib import Path
>>> with tempfile.TemporaryDirectory() as directory:
...     written = write_deployment(directory, "gfcr/ToolUse-v0", ["--env-arg", "num_tasks=5"])
...     command = Path(directory, "Dockerfile").read_text().splitlines()[-1]
>>> [path.name for path in written]
['Dockerfile', 'openenv.yaml', 'README.md', 'pyproject.toml', '__init__.py', 'client.py']
>>> print(command.removeprefix("CMD "))
["sh", "-c", "exec gfcr serve-env gfcr/ToolUse-v0 --env-arg num_tasks=5 --host 0.0.0.0 --port \\"$PORT\\""]
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym

from gfcr.errors import ConfigError, UnknownNameError
from gfcr.registry import list_envs
from gfcr.version import __version__

VENV = "/opt/gfcr"
CLIENT = '''"""The typed client of {env_id} served by gfcr: gfcr's own (`pip install 'gfcr[remote]'`)."""

from gfcr.remote import GfcrEnvClient, GfcrObservation, NativeToolCall, TextAction

__all__ = ["GfcrEnvClient", "GfcrObservation", "NativeToolCall", "TextAction"]
'''
WHEELS_HELP = (
    "make it with `pip wheel 'gfcr[remote]' pip -w WHEELS` (in a checkout: `pip wheel '.[remote]' pip ...`)"
)


def write_deployment(
    directory: str | Path,
    env_id: str,
    arguments: Sequence[str] = (),
    *,
    port: int = 8000,
    requirements: Sequence[str] = (),
    wheelhouse: str | Path | None = None,
) -> list[Path]:
    """Write the deployment of `gfcr serve-env env_id *arguments` into `directory`; the files written.

    `arguments` are serve-env's options after the env id (not `--host`, `--port` or `--token`:
    the image listens on 0.0.0.0:$PORT, `port` by default, and reads its token at run time).
    `requirements` are more packages the image installs beside gfcr (from `wheelhouse` if given).
    """
    if env_id not in gym.registry:
        raise UnknownNameError(
            "env id",
            env_id,
            list_envs(),
            hint="import the module that registers it first (`--import MODULE`)",
        )
    if refused := [a for a in arguments if a.split("=")[0] in ("--host", "--port", "--token")]:
        raise ConfigError(
            f"a deployment sets --host, --port and --token itself, got {refused}: the image listens on "
            "0.0.0.0:$PORT and reads its token from GFCR_SERVE_TOKEN when the container starts"
        )
    wheels = None if wheelhouse is None else _wheels(Path(wheelhouse))  # refused before anything is written
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    install = [f"gfcr[remote]=={__version__}", *requirements]
    steps = _from_index(install) if wheels is None else _from_wheels(install, directory, wheels)
    command = f'exec gfcr serve-env {shlex.join([env_id, *arguments])} --host 0.0.0.0 --port "$PORT"'
    files = {
        "Dockerfile": _dockerfile(env_id, steps, port, command),
        "openenv.yaml": _manifest(env_id, port),
        "README.md": _readme(env_id, port),
        "pyproject.toml": _pyproject(env_id, install),
        "__init__.py": f'"""{env_id} over OpenEnv."""\n\nfrom .client import *  # noqa: F403\n',
        "client.py": CLIENT.format(env_id=env_id),
    }
    for name, text in files.items():
        (directory / name).write_text(text)
    return [directory / name for name in files]


def image_name(env_id: str) -> str:
    """The image (and OpenEnv env) name of `env_id`.

    >>> image_name("gfcr/ToolUse-v0")
    'gfcr-tooluse-v0'
    """
    return re.sub(r"[^a-z0-9]+", "-", env_id.lower()).strip("-")


def _from_index(install: list[str]) -> str:
    """The install steps: `install` from PyPI (or the index pip is configured with)."""
    return f"RUN python3 -m venv {VENV} \\\n && {VENV}/bin/pip install --no-cache-dir {shlex.join(install)}\n"


def _wheels(wheelhouse: Path) -> list[Path]:
    """The wheels of `wheelhouse`, which must hold gfcr's (this version) and pip's."""
    wheels = sorted(wheelhouse.glob("*.whl"))
    names = [w.name for w in wheels]
    needed = (f"gfcr-{__version__}-", "pip-")
    if not all(any(n.startswith(prefix) for n in names) for prefix in needed):
        shown = ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")
        raise ConfigError(
            f"the wheelhouse {wheelhouse} needs a wheel of gfcr {__version__} and one of pip (it holds "
            f"{len(names)} wheels: {shown or 'none'}): {WHEELS_HELP}"
        )
    return wheels


def _from_wheels(install: list[str], directory: Path, wheels: list[Path]) -> str:
    """The install steps: `install` from `wheels`, copied to `directory/wheels`."""
    pips = [w for w in wheels if w.name.startswith("pip-")]
    target = directory / "wheels"
    shutil.rmtree(target, ignore_errors=True)  # a stale wheel of an earlier write would be installable
    target.mkdir()
    for wheel in wheels:
        shutil.copy2(wheel, target / wheel.name)
    pip = f"/wheels/{pips[-1].name}/pip"  # pip runs from its wheel: the base image needs no pip
    return (
        "# From wheels/ only, no package index: the build needs no network (the wheels stay in a layer).\n"
        "COPY wheels/ /wheels/\n"
        f"RUN python3 -m venv --without-pip {VENV} \\\n"
        f" && {VENV}/bin/python {pip} install --no-cache-dir --no-index --find-links /wheels "
        f"{shlex.join(install)}\n"
    )


def _dockerfile(env_id: str, install_steps: str, port: int, command: str) -> str:
    health = "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/health', timeout=4)"
    return f"""\
# `gfcr serve-env {env_id}` as an OpenEnv env (written by `gfcr serve-env --write-deployment`,
# gfcr {__version__}).
#   docker build -t {image_name(env_id)} .
#   docker run -p {port}:{port} [-e GFCR_SERVE_TOKEN=...] {image_name(env_id)}
# BASE_IMAGE: Debian-like, Python >= 3.11, useradd (--build-arg BASE_IMAGE=... to change it).
ARG BASE_IMAGE=python:3.11-slim
FROM ${{BASE_IMAGE}}
RUN useradd --create-home --shell /usr/sbin/nologin gfcr
{install_steps}USER gfcr
WORKDIR /home/gfcr
ENV PATH={VENV}/bin:$PATH PYTHONUNBUFFERED=1 PORT={port}
EXPOSE {port}
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \\
    CMD python3 -c "{health}"
CMD {json.dumps(["sh", "-c", command])}
"""


def _manifest(env_id: str, port: int) -> str:
    description = f"gfcr's {env_id} over the OpenEnv protocol (gfcr serve-env)"
    return f"""\
# The OpenEnv manifest of `gfcr serve-env {env_id}` (gfcr {__version__}). `openenv push` ships this
# directory to a Hugging Face Space; the server starts with the Dockerfile's CMD.
spec_version: 1
name: {image_name(env_id)}
version: {json.dumps(__version__)}
description: {json.dumps(description)}
type: space
runtime: fastapi
port: {port}
"""


def _pyproject(env_id: str, install: list[str]) -> str:
    """The env as an installable package (what `openenv push` ships): its client, gfcr's typed one."""
    package = image_name(env_id).replace("-", "_")
    return f"""\
[build-system]
requires = ["setuptools>=69"]
build-backend = "setuptools.build_meta"

[project]
name = "openenv-{image_name(env_id)}"
version = {json.dumps(__version__)}
description = {json.dumps(f"gfcr's {env_id} over the OpenEnv protocol")}
requires-python = ">=3.11"
dependencies = {json.dumps(install)}

[tool.setuptools]
packages = [{json.dumps(package)}]
package-dir = {{ {json.dumps(package)} = "." }}
"""


def _readme(env_id: str, port: int) -> str:
    name = image_name(env_id)
    return f"""\
---
title: {json.dumps(env_id)}
sdk: docker
app_port: {port}
tags: [openenv, gfcr]
---

# {env_id} over the OpenEnv protocol

Written by `gfcr serve-env {env_id} --write-deployment` (gfcr {__version__}).

    docker build -t {name} .
    docker run -p {port}:{port} -e GFCR_SERVE_TOKEN=... {name}   # the token is optional

Then play it with `gfcr.remote.GfcrEnvClient(base_url="http://HOST:{port}")`, openenv's
`GenericEnvClient`, or `gymnasium.make("gfcr/Remote-v0", url="http://HOST:{port}")`.
"""
