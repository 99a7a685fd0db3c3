"""Beyond one machine: env workers and policy replicas as Ray actors.

`RunnerConfig(backend="ray")` places the runner's env workers as `EnvHost` actors
(`RayEnvPool`): on the machines of a Ray cluster, or on this one. `ray_policy(spec, replicas=N,
num_gpus=1)` builds a policy inside N actors (e.g. one per GPU) and sends each batch to the next
free one; for `hf:` and `vllm:` specs the driver loads only the tokenizer, so token-in-token-out
works as with a local policy. Ray connects to the cluster in `RAY_ADDRESS`, or starts a local one.

Env actors reserve no CPU by default (`num_cpus=0`): they mostly wait; give them CPUs on a
cluster where verifiers are heavy. They are spread over the cluster's live nodes in turn; when a
node leaves the cluster (its machine died, or `ray stop` ran there), the episodes on it fail with
"env node lost", the runner runs them again on the other nodes, and `RayEnvPool.lost` names the
node for the run's summary (`RunResult.lost`). Ray declares a node dead once its health checks
fail (`health_check_period_ms` x `health_check_failure_threshold`: 15 s by default); a worker
that dies before then is an ordinary "env worker died", retried `retries` times.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from gfcr.agents.policies.chat import ChatTokens
from gfcr.agents.runner.env_host import EnvHost
from gfcr.agents.runner.env_pools import _START_TIMEOUT_S, NODE_LOST, RemoteEnvPool, describe
from gfcr.core.policy import Completion, Request
from gfcr.errors import ConfigError, EpisodeError, needs_extra

logger = logging.getLogger(__name__)


def _ray() -> Any:
    with needs_extra("the Ray backend"):
        import ray

    if not ray.is_initialized():
        ray.init(include_dashboard=False, log_to_driver=False)
    return ray


class _EnvWorker(EnvHost):
    """The env actor's body: an `EnvHost` that answers when it is up."""

    def ready(self) -> None:
        pass


@dataclass(frozen=True)
class _Worker:
    actor: Any
    node_id: str
    node: str  # the node as the run's summary names it: "ray node 1a2b3c4d (10.0.0.2)"


class RayEnvPool(RemoteEnvPool):
    """Env workers as Ray actors spread over the live nodes, started on first use; a hung actor is
    killed and replaced, and a node that leaves the cluster is recorded in `lost`."""

    def __init__(self, num_workers: int, timeout_s: float, *, num_cpus: float = 0) -> None:
        super().__init__(num_workers, timeout_s)
        self._ray = _ray()
        self._actor = self._ray.remote(_EnvWorker)
        self._num_cpus = num_cpus
        self._turns = itertools.count()
        self._lost_ids: set[str] = set()  # nodes seen leaving the cluster
        self._run_again: dict[str, int] = {}  # by node: episodes whose worker it took with it

    def _start(self) -> _Worker:
        """A worker on the next live node in turn, so that workers spread evenly: Ray's SPREAD and
        soft node affinity are best effort (here they put 3 of 4 workers on one of two nodes)."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = {n["NodeID"]: n["NodeManagerAddress"] for n in self._ray.nodes() if n["Alive"]}
        live = sorted(set(nodes) - self._lost_ids)
        if not live:
            raise EpisodeError("env worker died", "no Ray node is left to start it on", retryable=True)
        node_id = live[next(self._turns) % len(live)]
        worker = _Worker(None, node_id, f"ray node {node_id[:8]} ({nodes[node_id]})")
        strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
        options = {"num_cpus": self._num_cpus, "max_concurrency": 1, "scheduling_strategy": strategy}
        actor = self._actor.options(**options).remote()
        try:
            self._ray.get(actor.ready.remote(), timeout=_START_TIMEOUT_S)
        except self._ray.exceptions.RayError as e:  # died, unschedulable, or no answer in time
            self._ray.kill(actor)
            if not self._alive(node_id):  # placed on a node that was leaving
                raise self._node_lost(worker, "start") from e
            raise EpisodeError("env worker died", f"a Ray worker did not start: {e}", retryable=True) from e
        logger.info("env worker started on %s", worker.node)
        return replace(worker, actor=actor)

    async def _invoke(self, worker: _Worker, method: str, args: tuple, timeout_s: float) -> Any:
        ray = self._ray
        try:
            return await asyncio.wait_for(
                asyncio.wrap_future(getattr(worker.actor, method).remote(*args).future()), timeout_s
            )
        except TimeoutError:
            raise EpisodeError("env timeout", f"{method} took over {timeout_s} s") from None
        except ray.exceptions.RayActorError as e:
            if not self._alive(worker.node_id):
                raise self._node_lost(worker, method) from e
            raise EpisodeError(
                "env worker died", f"Ray actor lost during {method}: {e}", retryable=True
            ) from e
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if isinstance(e.cause, BaseException) else e
            raise EpisodeError("env error", describe(cause)) from e

    def _alive(self, node_id: str) -> bool:
        return node_id not in self._lost_ids and any(
            n["NodeID"] == node_id and n["Alive"] for n in self._ray.nodes()
        )

    def _node_lost(self, worker: _Worker, method: str) -> EpisodeError:
        """The error of an episode whose worker's node left the cluster, counted in `lost`."""
        if worker.node_id not in self._lost_ids:
            self._lost_ids.add(worker.node_id)
            logger.warning("%s left the cluster; its episodes run again on the other nodes", worker.node)
        self._run_again[worker.node] = self._run_again.get(worker.node, 0) + 1
        count = self._run_again[worker.node]
        self.lost[worker.node] = f"left the cluster mid-run: {count} episode{'s' * (count != 1)} run again"
        return EpisodeError(NODE_LOST, f"{worker.node} left the cluster during {method}", retryable=True)

    def _kill(self, worker: _Worker) -> None:
        self._ray.kill(worker.actor)


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
