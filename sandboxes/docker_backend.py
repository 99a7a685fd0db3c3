"""The Docker backend: each run in its own pre-started container, through the `docker` SDK.

Containers have no network, a read-only root, tmpfs `/work` and `/tmp`, memory, process and
CPU limits, every capability dropped, `no-new-privileges`, and run as `nobody`. A pool of warm
containers waits (started in the background); each run takes one and the container is removed
afterwards, so runs share nothing; when `run` returns, the run's container is already killed.
Containers get gfcr's own seccomp profile (`seccomp.docker_profile()`, the local backend's deny
list) instead of the engine's default. The image must have `python3` (a small Python bootstrap
unpacks the program's files) and bash; the default, `gfcr-sandbox:bookworm`, is Debian bookworm
minbase with python3, built locally by `scripts/setup_docker.sh` (`make setup`).

Needs a reachable Docker engine (`DOCKER_HOST` or the local socket) and `pip install docker`;
otherwise `DockerSandbox()` raises `SandboxUnavailableError` saying so.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import logging
import os
import queue
import socket
import struct
import threading
import time
from pathlib import Path
from typing import Any

from gfcr.errors import SandboxUnavailableError
from gfcr.sandboxes import program
from gfcr.sandboxes.backend import Job, RawOutcome, SandboxBase, SessionBase, make_result
from gfcr.sandboxes.base import ExecResult, Limits
from gfcr.sandboxes.seccomp import docker_profile

logger = logging.getLogger(__name__)
DEFAULT_IMAGE = "gfcr-sandbox:bookworm"  # built by scripts/setup_docker.sh
PROGRAM_SOURCE = Path(program.__file__).read_text()  # runs Python programs and sessions in the container
IDLE_PROCESSES = 2  # docker-init and `sleep infinity` count against the container's pids limit
USER = "65534:65534"
# Reads a length-prefixed JSON payload from stdin (files, rlimits), unpacks it, then execs the
# program, which reads the rest of stdin as its own.
BOOTSTRAP = """
import base64, json, os, resource, sys
def read(n):
    data = b""
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            break
        data += chunk
    return data
payload = json.loads(read(int.from_bytes(read(4), "big")))
for path, data in payload["files"]:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))
cpu, disk = payload["cpu_s"], payload["disk_bytes"]
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_FSIZE, (disk, disk))
os.execvp(sys.argv[1], sys.argv[1:])
"""


def connect(client: Any = None) -> Any:
    """A `docker` client whose engine answers; `SandboxUnavailableError` naming the fix otherwise."""
    try:
        import docker
    except ImportError as e:
        raise SandboxUnavailableError("the docker backend needs the Docker SDK: pip install docker") from e
    try:
        client = client or docker.from_env(timeout=30)
        client.ping()
    except Exception as e:  # the SDK raises several types for "no engine"
        raise SandboxUnavailableError(
            f"no Docker engine is reachable ({str(e)[:200]}); start dockerd or set DOCKER_HOST "
            "(e.g. DOCKER_HOST=ssh://user@host or tcp://host:2376)"
        ) from e
    return client


class DockerSandbox(SandboxBase):
    """Runs each program in a fresh container from a warm pool (see the module docstring)."""

    backend = "docker"

    def __init__(
        self,
        *,
        limits: Limits | None = None,
        pool_size: int | None = None,
        image: str = DEFAULT_IMAGE,
        client: Any = None,
        modules: object = None,  # accepted for a uniform make_sandbox(); only local workers preload
        queue_timeout_s: float = 60.0,
    ) -> None:
        super().__init__(limits, pool_size or 2, queue_timeout_s)
        self.client = connect(client)
        self.image = image
        self.pool_size = pool_size or 2
        self._ready: queue.Queue[Any] = queue.Queue()
        self._starting = 0
        self._lock = threading.Lock()
        self._ensure_image()
        self._refill()

    def _ensure_image(self) -> None:
        import docker

        try:
            self.client.images.get(self.image)
            return
        except docker.errors.ImageNotFound:
            pass
        try:
            logger.info("pulling %s", self.image)
            self.client.images.pull(self.image)
        except docker.errors.APIError as e:
            raise SandboxUnavailableError(
                f"the Docker image {self.image!r} is not on this engine and cannot be pulled "
                f"({str(e)[:200]}); build the default one with `bash scripts/setup_docker.sh` "
                "(`make setup`) or pass image= one that has python3"
            ) from e

    # -- containers -------------------------------------------------------------------------------

    def start_container(self, limits: Limits, command: list[str] | None = None) -> Any:
        """A running, locked-down container (idle unless `command` is given)."""
        disk = f"size={limits.disk_mb}m,mode=1777,uid=65534,gid=65534"  # the image's dir may be root's
        return self.client.containers.run(
            self.image, command or ["sleep", "infinity"], detach=True, init=True, network_mode="none",
            read_only=True, user=USER, cap_drop=["ALL"], hostname="sandbox",
            security_opt=["no-new-privileges", f"seccomp={docker_profile()}"],
            mem_limit=f"{limits.memory_mb}m", memswap_limit=f"{limits.memory_mb}m",
            pids_limit=limits.max_processes + IDLE_PROCESSES, nano_cpus=1_000_000_000,
            tmpfs={"/work": disk, "/tmp": disk}, working_dir="/work", environment=program.ENV,
            labels={"gfcr.sandbox": "1", "gfcr.pid": str(os.getpid())},  # whose container
        )  # fmt: skip

    def _refill(self) -> None:
        """Start containers in the background until `pool_size` are ready or starting."""
        with self._lock:
            missing = self.pool_size - self._ready.qsize() - self._starting
            self._starting += max(missing, 0)
        for _ in range(max(missing, 0)):
            threading.Thread(target=self._start_one, daemon=True).start()

    def _start_one(self) -> None:
        try:
            self._ready.put(self.start_container(self.limits))
        except Exception as e:  # logged; a run that finds no container starts one itself
            logger.warning("could not start a sandbox container: %s", e)
        finally:
            with self._lock:
                self._starting -= 1

    def _take(self, limits: Limits) -> Any:
        if limits == self.limits:
            try:
                container = self._ready.get_nowait()
            except queue.Empty:
                container = None
            self._refill()
            if container is not None:
                return container
        return self.start_container(limits)

    @staticmethod
    def remove(container: Any) -> None:
        """Kill `container` now (nothing of its run outlives the call), remove it in the background."""
        _quietly(container.kill)
        threading.Thread(target=lambda: _quietly(container.remove, force=True), daemon=True).start()

    # -- runs -------------------------------------------------------------------------------------

    def _run(self, job: Job) -> ExecResult:
        spec, limits = job.language, job.limits
        source = f"/tmp/.gfcr/{spec.filename}"
        payload = {
            "files": [[path, base64.b64encode(data).decode()] for path, data in job.files]
            + [[source, base64.b64encode(job.code_bytes).decode()]],
            "cpu_s": int(limits.cpu_s + 0.999),
            "disk_bytes": limits.disk_mb << 20,
        }
        data = program.json_bytes(payload)
        container = self._take(limits)
        try:
            if spec.inline:  # Python runs through gfcr's own runner, with the local backend's semantics
                command = ["python3", "-c", BOOTSTRAP, "python3", "-I", "-c", PROGRAM_SOURCE, "run", source]
            else:
                command = ["python3", "-c", BOOTSTRAP, *spec.command(source)]
            stream = ExecStream(self.client, container, command, limits)
            stream.feed(len(data).to_bytes(4, "big") + data + job.stdin_bytes)
            stream.read_until(lambda: False)
            return make_result(stream.outcome(), limits)
        finally:
            self.remove(container)

    def session(self, language: str = "python", *, limits: Limits | None = None) -> DockerSession:
        return DockerSession(self, language, limits or self.limits)

    def close(self) -> None:
        super().close()
        while True:
            try:
                self.remove(self._ready.get_nowait())
            except queue.Empty:
                return


class ExecStream:
    """One `docker exec` with its attached socket: write stdin, read demultiplexed, capped output."""

    def __init__(self, client: Any, container: Any, command: list[str], limits: Limits) -> None:
        self.client, self.container, self.limits = client, container, limits
        self.exec_id = client.api.exec_create(container.id, command, stdin=True, user=USER, workdir="/work")[
            "Id"
        ]
        self.socket: socket.socket = client.api.exec_start(self.exec_id, socket=True)._sock
        self.output = {1: bytearray(), 2: bytearray()}
        self.truncated = {1: False, 2: False}
        self.stopped_for: str | None = None
        self.started = time.monotonic()
        self.oom_kills = container_usage(container.id)[2]  # a session's container may have had some
        self.deadline = self.started + limits.wall_s
        self._buffer = b""
        self.eof = False

    def send(self, data: bytes) -> None:
        self.socket.sendall(data)

    def feed(self, data: bytes) -> None:
        """Send a run's input, then end it, from a thread: the program may read it slowly, or never."""

        def write() -> None:
            view = memoryview(data)
            while view and not self.eof and self.stopped_for is None:
                try:
                    view = view[self.socket.send(view[: 1 << 16]) :]
                except TimeoutError:  # the reader's timeout, which is the socket's: try again
                    continue
                except OSError:  # the program has exited, or was stopped
                    return
            with contextlib.suppress(OSError):
                self.socket.shutdown(socket.SHUT_WR)

        threading.Thread(target=write, name="gfcr-docker-stdin", daemon=True).start()

    def read_until(self, done: Any) -> None:
        """Read frames until `done()`, end of stream, or a limit (then the container is killed)."""
        while not self.eof and not done() and self.stopped_for is None:
            timeout = self.deadline - time.monotonic()
            if timeout <= 0:
                self.stop("timeout")
                break
            self.socket.settimeout(min(timeout, 1.0))
            try:
                chunk = self.socket.recv(1 << 16)
            except TimeoutError:
                continue
            if not chunk:
                self.eof = True
                break
            self._buffer += chunk
            self._split_frames()

    def _split_frames(self) -> None:
        while len(self._buffer) >= 8:
            kind, size = self._buffer[0], struct.unpack(">I", self._buffer[4:8])[0]
            if len(self._buffer) < 8 + size:
                return
            payload, self._buffer = self._buffer[8 : 8 + size], self._buffer[8 + size :]
            stream = 2 if kind == 2 else 1
            room = self.limits.max_output_bytes - len(self.output[stream])
            self.output[stream] += payload[: max(room, 0)]
            if len(payload) > room:
                self.truncated[stream] = True
                self.stop("output_limit")

    def stop(self, reason: str) -> None:
        self.stopped_for = self.stopped_for or reason
        _quietly(self.container.kill)

    def take_output(self) -> tuple[bytes, bytes, bool, bool]:
        out = (bytes(self.output[1]), bytes(self.output[2]), self.truncated[1], self.truncated[2])
        self.output = {1: bytearray(), 2: bytearray()}
        self.truncated = {1: False, 2: False}
        return out

    def outcome(self, exit_code: int | None = None, started: float | None = None) -> RawOutcome:
        if exit_code is None and self.stopped_for is None:
            exit_code = self._exit_code()
        state = self.client.api.inspect_container(self.container.id)["State"]
        signal_number = None
        if exit_code is not None and exit_code > 128 and self.stopped_for is None:
            signal_number = exit_code - 128  # the shell convention docker reports
            exit_code = None
        stdout, stderr, out_cut, err_cut = self.take_output()
        wall = time.monotonic() - (started or self.started)
        cpu_s, rss_mb, oom_kills = container_usage(self.container.id)
        return RawOutcome(
            exit_code, signal_number, self.stopped_for, wall, cpu_s, rss_mb * 1024, stdout, stderr,
            out_cut, err_cut,
            out_of_memory=bool(state.get("OOMKilled")) or oom_kills > self.oom_kills,
        )  # fmt: skip

    def _exit_code(self) -> int | None:
        """The exec's exit code (it may still be finishing when its output stream ends)."""
        deadline = time.monotonic() + 5.0
        while True:
            info = self.client.api.exec_inspect(self.exec_id)
            if not info.get("Running") or time.monotonic() > deadline:
                return info.get("ExitCode")
            time.sleep(0.01)

    def close(self) -> None:
        _quietly(self.socket.close)


class DockerSession(SessionBase):
    """A session in its own container: Python through gfcr's session loop, bash through a shell."""

    def __init__(self, sandbox: DockerSandbox, language: str, limits: Limits) -> None:
        super().__init__(language, limits)
        self._sandbox = sandbox
        self._container: Any = None
        self._stream: ExecStream | None = None
        self._started = False
        self._cpu_spent = 0.0  # the container's CPU seconds up to the end of the last call

    def _run(self, job: Job) -> ExecResult:
        code, stdin, limits = job.code, job.stdin, job.limits
        if self._stream is None or self._stream.eof or self._stream.stopped_for:
            self._start()
        stream = self._stream
        assert stream is not None
        started = time.monotonic()
        stream.deadline, stream.limits = started + limits.wall_s, limits
        nonce = os.urandom(8).hex()
        _quietly(self._container.unpause)  # frozen since the last call (a fresh container is not)
        if self.language == "python":
            request = program.json_bytes(
                {"code": code, "stdin": stdin, "cpu_s": limits.cpu_s, "nonce": nonce}
            )
            stream.send(len(request).to_bytes(4, "big") + request)
            reply = self._python_reply(stream, nonce)
        else:
            stream.send(program.bash_cell(code, stdin, 1, nonce))
            reply = self._bash_reply(stream, nonce)
        if reply is None:
            raw = stream.outcome(started=started)
            self._close_container()
        else:
            self._container.pause()  # what the cell left running waits for the next call (cgroup freezer)
            raw = stream.outcome(int(reply.get("exit_code", 1)), started)
        # the container's CPU since the last call: what earlier cells left running is counted here
        cpu_s, self._cpu_spent = raw.cpu_s - self._cpu_spent, raw.cpu_s
        return make_result(dataclasses.replace(raw, cpu_s=cpu_s), limits)

    @property
    def alive(self) -> bool:
        stream = self._stream
        return stream is not None and not stream.eof and stream.stopped_for is None

    def _python_reply(self, stream: ExecStream, nonce: str) -> dict[str, Any] | None:
        """The session loop's reply with `nonce` (stdout holds replies only: cells' output is captured)."""
        found: list[dict[str, Any]] = []

        def done() -> bool:
            out = stream.output[1]
            while len(out) >= 4 and len(out) >= 4 + (size := int.from_bytes(out[:4], "big")):
                frame, out = bytes(out[4 : 4 + size]), out[4 + size :]
                stream.output[1] = out
                with contextlib.suppress(ValueError, TypeError):
                    if (reply := dict(json.loads(frame))).get("nonce") == nonce:
                        found.append(reply)
            return bool(found)

        stream.read_until(done)
        if not done():
            return None
        reply = found[0]
        stream.output[1] = bytearray(reply.pop("stdout", "").encode())
        stream.output[2] += reply.pop("stderr", "").encode()
        return reply

    def _bash_reply(self, stream: ExecStream, nonce: str) -> dict[str, Any] | None:
        marker = f"{nonce} ".encode()
        stream.read_until(lambda: marker in stream.output[1] and stream.output[1].endswith(b"\n"))
        out = stream.output[1]
        position = out.rfind(marker)
        if position < 0:
            return None
        status = out[position + len(marker) :].split(b"\n")[0]
        stream.output[1] = out[:position]
        return {"exit_code": int(status) if status.lstrip(b"-").isdigit() else 1}

    def _start(self) -> None:
        if self._started:
            self.restarts += 1
        self._close_container()
        self._started = True
        self._container = self._sandbox.start_container(self.limits)
        if self.language == "python":
            command = ["python3", "-c", PROGRAM_SOURCE, "session", "--capture"]
        else:
            command = ["bash", "--norc", "--noprofile"]
        self._stream = ExecStream(self._sandbox.client, self._container, command, self.limits)

    def _close_container(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None
        if self._container is not None:
            self._sandbox.remove(self._container)
            self._container = None

    def close(self) -> None:
        self._close_container()


def container_usage(container_id: str) -> tuple[float, float, int]:
    """CPU seconds, peak memory (MiB) and OOM kills of a container so far, from the host's cgroups.

    Zeros where they cannot be read: an engine on another machine, or a container already gone.
    """
    root = Path("/sys/fs/cgroup")
    v1 = {kind: root / kind / "docker" / container_id for kind in ("cpuacct", "memory")}
    try:  # cgroup v1 (cgroupfs driver)
        cpu = int((v1["cpuacct"] / "cpuacct.usage").read_text()) / 1e9
        peak = int((v1["memory"] / "memory.max_usage_in_bytes").read_text()) / (1 << 20)
        return cpu, peak, _field(v1["memory"] / "memory.oom_control", "oom_kill")
    except (OSError, ValueError):
        pass
    for v2 in (root / "system.slice" / f"docker-{container_id}.scope", root / "docker" / container_id):
        try:
            cpu = _field(v2 / "cpu.stat", "usage_usec") / 1e6
            peak = int((v2 / "memory.peak").read_text()) / (1 << 20)
            return cpu, peak, _field(v2 / "memory.events", "oom_kill")
        except (OSError, ValueError):
            continue
    return 0.0, 0.0, 0


def _field(path: Path, name: str) -> int:
    """The number after `name` in a cgroup file of `name value` lines (0 if absent)."""
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if key == name:
            return int(value)
    return 0


def _quietly(call: Any, **kwargs: Any) -> None:
    try:
        call(**kwargs)
    except Exception as e:  # cleanup of a container that may already be gone
        logger.debug("docker cleanup: %s", e)
