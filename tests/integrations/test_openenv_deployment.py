"""`gfcr serve-env ENV_ID --write-deployment DIR`: the Dockerfile and openenv.yaml of a served env,
and (`test_docker_image_...`, slow) the image built from them by the real Docker engine, serving."""

from __future__ import annotations

import json
import shlex
import socket
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import gymnasium as gym
import httpx
import pytest
import yaml
from typer.testing import CliRunner

pytest.importorskip("openenv", reason="the remote extra is not installed: pip install -e '.[remote]'")

from openenv.cli._cli_utils import validate_env_structure  # noqa: E402

import gfcr  # noqa: E402
from gfcr.apps.cli import app  # noqa: E402
from gfcr.remote import GfcrEnvClient, NativeToolCall, TextAction, write_deployment  # noqa: E402
from gfcr.version import __version__  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = """
import gymnasium
gymnasium.register("acme/Echo-v0", entry_point="gfcr.envs.tooluse.env:ToolUseEnv")
"""


def write(*arguments: str) -> str:
    result = CliRunner().invoke(app, ["serve-env", *arguments], terminal_width=200)
    assert result.exit_code == 0, result.output
    return result.output


def image_command(dockerfile: Path) -> list[str]:
    """The `gfcr serve-env` command a container of the image runs (its CMD, as the shell splits it)."""
    cmd = json.loads(dockerfile.read_text().splitlines()[-1].removeprefix("CMD "))
    assert cmd[:2] == ["sh", "-c"]
    return shlex.split(cmd[2])


def test_the_image_command_is_the_serve_env_command_with_its_plugin_keywords_and_limits(tmp_path, monkeypatch):
    (tmp_path / "acme_echo.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "acme_echo", raising=False)
    try:
        output = write("acme/Echo-v0", "-e", "num_tasks=5", "-e", 'system_prompt="Be brief."', "--import",
                       "acme_echo", "--send-gold", "--max-concurrency", "3", "--token", "s3cret", "--port", "9001",
                       "--install", "acme-echo==1.0", "--write-deployment", str(tmp_path / "deploy"))  # fmt: skip
    finally:
        gym.registry.pop("acme/Echo-v0", None)
    deploy = tmp_path / "deploy"
    assert "GFCR_SERVE_TOKEN" in output and "docker build -t acme-echo-v0" in output
    assert image_command(deploy / "Dockerfile") == [
        "exec", "gfcr", "serve-env", "acme/Echo-v0", "--env-arg", "num_tasks=5",
        "--env-arg", 'system_prompt="Be brief."', "--import", "acme_echo", "--max-sessions", "64",
        "--idle-timeout", "600.0", "--max-request-bytes", "1048576", "--send-gold", "--max-concurrency", "3",
        "--host", "0.0.0.0", "--port", "$PORT",
    ]  # fmt: skip
    dockerfile = (deploy / "Dockerfile").read_text()
    assert f"pip install --no-cache-dir 'gfcr[remote]=={__version__}' acme-echo==1.0" in dockerfile
    assert "ENV PATH=/opt/gfcr/bin:$PATH PYTHONUNBUFFERED=1 PORT=9001" in dockerfile and "USER gfcr" in dockerfile
    assert "HEALTHCHECK" in dockerfile and "/health" in dockerfile
    assert not any("s3cret" in path.read_text() for path in deploy.iterdir())  # the token is never written
    manifest = yaml.safe_load((deploy / "openenv.yaml").read_text())
    assert manifest | {"description": None} == {
        "spec_version": 1, "name": "acme-echo-v0", "version": __version__, "description": None,
        "type": "space", "runtime": "fastapi", "port": 9001,
    }  # fmt: skip
    front_matter = yaml.safe_load((deploy / "README.md").read_text().split("---")[1])
    assert front_matter["sdk"] == "docker" and front_matter["app_port"] == 9001  # a Hugging Face Docker Space
    validate_env_structure(deploy)  # what `openenv push` checks first (it raises on a missing file)
    client: dict = {}
    exec((deploy / "client.py").read_text(), client)
    assert client["GfcrEnvClient"] is GfcrEnvClient  # the env's typed client is gfcr's
    dependencies = tomllib.loads((deploy / "pyproject.toml").read_text())["project"]["dependencies"]
    assert dependencies == [f"gfcr[remote]=={__version__}", "acme-echo==1.0"]


def test_a_deployment_refuses_what_it_cannot_honour(tmp_path):
    with pytest.raises(gfcr.UnknownNameError, match="did you mean 'gfcr/ToolUse-v0'.*--import MODULE"):
        write_deployment(tmp_path, "gfcr/ToolUse-v1")
    with pytest.raises(gfcr.ConfigError, match=r"sets --host, --port and --token itself, got \['--port=1'\]"):
        write_deployment(tmp_path, "gfcr/ToolUse-v0", ["--port=1"])
    (tmp_path / "wheels").mkdir()
    (tmp_path / "wheels" / "numpy-2.0-cp311-cp311-linux_x86_64.whl").write_text("")
    with pytest.raises(gfcr.ConfigError, match=rf"needs a wheel of gfcr {__version__} and one of pip .*pip wheel"):
        write_deployment(tmp_path / "deploy", "gfcr/ToolUse-v0", wheelhouse=tmp_path / "wheels")
    assert not (tmp_path / "deploy").exists()  # refused before anything is written


def test_a_wheelhouse_is_copied_whole_and_replaces_the_last_one(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    names = [f"gfcr-{__version__}-py3-none-any.whl", "pip-26.3-py3-none-any.whl", "numpy-2.0-cp311-none.whl"]
    for name in names:
        (wheels / name).write_text(name)
    deploy = tmp_path / "deploy"
    (deploy / "wheels").mkdir(parents=True)
    (deploy / "wheels" / "gfcr-0.0.1-py3-none-any.whl").write_text("stale")
    write_deployment(deploy, "gfcr/ToolUse-v0", wheelhouse=wheels)
    assert sorted(p.name for p in (deploy / "wheels").iterdir()) == sorted(names)
    dockerfile = (deploy / "Dockerfile").read_text()
    assert "COPY wheels/ /wheels/" in dockerfile and "--no-index --find-links /wheels" in dockerfile
    assert "/opt/gfcr/bin/python /wheels/pip-26.3-py3-none-any.whl/pip install" in dockerfile


# -- the image, built by the real Docker engine -----------------------------------------------------


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory) -> Path:
    """gfcr (this checkout) and its dependencies as wheels, and pip's: what an offline build installs."""
    directory = tmp_path_factory.mktemp("wheelhouse")
    command = [sys.executable, "-m", "pip", "wheel", "-q", f"{ROOT}[remote]", "pip", "-w", str(directory)]
    built = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    return directory


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_docker_image_of_a_written_deployment_serves_the_env(docker_engine, wheelhouse, tmp_path):
    """Built from the wheelhouse on the sandbox's Debian base (no network in builds here), run with the
    host's network: its HEALTHCHECK turns healthy and the typed client plays an episode on it."""
    from gfcr.sandboxes.docker_backend import DEFAULT_IMAGE

    deploy = tmp_path / "deploy"
    write("gfcr/ToolUse-v0", "-e", "num_tasks=5", "--write-deployment", str(deploy), "--wheelhouse", str(wheelhouse))
    tag = f"gfcr-deployment-test:{tmp_path.name.lower()}"
    started = time.monotonic()
    docker_engine.images.build(path=str(deploy), tag=tag, buildargs={"BASE_IMAGE": DEFAULT_IMAGE}, rm=True, forcerm=True)
    built_s = time.monotonic() - started
    port = free_port()
    container = docker_engine.containers.run(
        tag, detach=True, network_mode="host", environment={"PORT": str(port), "GFCR_SERVE_TOKEN": "s3cret"},
        healthcheck={"interval": 1_000_000_000, "timeout": 5_000_000_000, "retries": 3},  # the image's test, each second
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while (health := _health(container)) != "healthy":
            assert health != "unhealthy" and time.monotonic() < deadline, (health, container.logs()[-3000:])
            time.sleep(1)
        assert container.exec_run("id -un").output.decode().strip() == "gfcr"  # not root
        url = f"http://127.0.0.1:{port}"
        assert httpx.post(f"{url}/reset", json={}).status_code == 401  # the token, given at run time
        headers = {"Authorization": "Bearer s3cret"}
        with GfcrEnvClient(base_url=url, headers=headers).sync() as env:
            first = env.reset(task_id="tooluse/3")
            looked = env.step(TextAction(tool_calls=[NativeToolCall(name="lookup")]))
            answer = env.step(looked.observation.text)
            assert (first.observation.env_id, answer.reward, answer.done) == ("gfcr/ToolUse-v0", 1.0, True)
            assert env.served["kwargs"] == {"num_tasks": 5} and env.state().step_count == 2
    finally:
        container.remove(force=True)
        docker_engine.images.remove(tag, force=True)
    print(f"image built in {built_s:.0f} s")


def _health(container) -> str:
    container.reload()
    return container.attrs["State"].get("Health", {}).get("Status", "none")
