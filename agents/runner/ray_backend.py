"""Beyond one machine: env workers and policy replicas as Ray actors.

`RunnerConfig(backend="ray")` places the runner's env workers as `EnvHost` actors
(`RayEnvPool`): on the machines of a Ray cluster, or on this one. `ray_policy(spec, replicas=N,
num_gpus=1)` builds a policy inside N actors (e.g. one per GPU) and sends each batch to the next
free one; for `hf:` and `vllm:` specs the driver loads only the tokenizer, so token-in-token-out
works as with a local policy. Ray connects to the cluster in `RAY_ADDRESS`, or starts a local one.

Env actors reserve no CPU by default (`num_cpus=0`): they mostly wait; give them CPUs on a
cluster where verifiers are heavy.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import Any

from gfcr.agents.policies.chat import ChatTokens
from gfcr.agents.runner.env_host import EnvHost
from gfcr.agents.runner.env_pools import RemoteEnvPool, describe
from gfcr.core.policy import Completion, Request
from gfcr.errors import ConfigError, EpisodeError, needs_extra


def _ray() -> Any:
    with needs_extra("the Ray backend"):
        import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    return ray


class RayEnvPool(RemoteEnvPool):
    """Env workers as Ray actors, started on first use; a hung actor is killed and replaced."""

    def __init__(self, num_workers: int, timeout_s: float, *, num_cpus: float = 0) -> None:
        super().__init__(num_workers, timeout_s)
        self._ray = _ray()
        self._actor = self._ray.remote(EnvHost).options(num_cpus=num_cpus, max_concurrency=1)

    def _start(self) -> Any:
        return self._actor.remote()

    async def _invoke(self, worker: Any, method: str, args: tuple, timeout_s: float) -> Any:
        ray = self._ray
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(getattr(worker, method).remote(*args).future()), timeout_s
            )
        except TimeoutError:
            raise EpisodeError("env timeout", f"{method} took over {timeout_s} s") from None
        except ray.exceptions.RayActorError as e:
            raise EpisodeError(
                "env worker died", f"Ray actor lost during {method}: {e}", retryable=True
            ) from e
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if isinstance(e.cause, BaseException) else e
            raise EpisodeError("env error", describe(cause)) from e

    def _kill(self, worker: Any) -> None:
        self._ray.kill(worker)


class _PolicyHost:
    """The actor body: builds the policy from its spec and answers batches."""

    def __init__(self, spec: str) -> None:
        from gfcr.agents import make_policy

        self.policy = make_policy(spec)

    def describe(self) -> tuple[str, str]:
        return self.policy.name, self.policy.version

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return self.policy.generate(requests)


class RayPolicy:
    """A policy running in `replicas` Ray actors; batches go round-robin to free replicas."""

    def __init__(self, spec: str, *, replicas: int = 1, num_gpus: float = 0, num_cpus: float = 1) -> None:
        if replicas < 1:
            raise ConfigError(f"replicas must be >= 1, got {replicas}")
        ray = _ray()
        actor = ray.remote(_PolicyHost).options(num_gpus=num_gpus, num_cpus=num_cpus, max_concurrency=1)
        self._replicas = [actor.remote(spec) for _ in range(replicas)]
        self._next = itertools.cycle(self._replicas)
        self._ray = ray
        self.name, self.version = ray.get(self._replicas[0].describe.remote())
        self.max_concurrent_batches = replicas

    def generate(self, requests: Sequence[Request]) -> list[Completion]:
        return self._ray.get(next(self._next).generate.remote(list(requests)))

    async def agenerate(self, requests: Sequence[Request]) -> list[Completion]:
        return await asyncio.wrap_future(next(self._next).generate.remote(list(requests)).future())

    def close(self) -> None:
        for replica in self._replicas:
            self._ray.kill(replica)


class RayTokenPolicy(ChatTokens, RayPolicy):
    """A `RayPolicy` of a model with a tokenizer: prompts and observations are encoded here."""

    def __init__(self, spec: str, **options: Any) -> None:
        from gfcr.agents.policies.chat import (
            load_chat_encoder,  # transformers: only where a tokenizer is needed
        )

        super().__init__(spec, **options)
        self.chat = load_chat_encoder(spec.partition(":")[2])


def ray_policy(spec: str, *, replicas: int = 1, num_gpus: float = 0, num_cpus: float = 1) -> RayPolicy:
    """The policy `spec` in Ray actors; token-in-token-out for `hf:` and `vllm:` specs."""
    cls = RayTokenPolicy if spec.partition(":")[0] in ("hf", "vllm") else RayPolicy
    return cls(spec, replicas=replicas, num_gpus=num_gpus, num_cpus=num_cpus)
