"""Losing a machine: env workers on a real two-node Ray cluster (a head and a second node, each a
raylet with a CPU of its own), the second node killed mid-run: its episodes run again on the head,
nothing is lost or written twice, and the run's summary names the lost node."""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

import runner_envs  # noqa: E402, F401  (registers test/Faulty-v0)
from ray.cluster_utils import Cluster  # noqa: E402

from gfcr.agents import OraclePolicy, Runner, RunnerConfig  # noqa: E402
from gfcr.agents.runner.specs import EpisodeSpec, env_config  # noqa: E402
from gfcr.core import read_jsonl  # noqa: E402

HERE = Path(__file__).parent
# Ray declares a node dead after its health checks fail: within a second here (15 s by default).
FAST_HEALTH_CHECKS = {
    "health_check_initial_delay_ms": 0,
    "health_check_period_ms": 200,
    "health_check_timeout_ms": 200,
    "health_check_failure_threshold": 3,
}


@pytest.fixture(scope="module")
def two_nodes():
    """A head and a second node, one CPU each; their workers import the test envs (PYTHONPATH)."""
    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), saved) if p)  # raylets pass it on
    head = {"num_cpus": 1, "include_dashboard": False, "_system_config": FAST_HEALTH_CHECKS}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    try:
        second = cluster.add_node(num_cpus=1)
        ray.init(address=cluster.address, include_dashboard=False, log_to_driver=False)
        yield cluster, second
    finally:
        ray.shutdown()
        cluster.shutdown()
        if saved is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = saved


@pytest.mark.timeout(300)
def test_a_node_lost_mid_run_has_its_episodes_run_again_on_the_other(two_nodes, tmp_path, caplog):
    cluster, second = two_nodes
    caplog.set_level(logging.INFO, logger="gfcr.agents.runner.ray_backend")
    out = tmp_path / "run.jsonl"
    specs = [EpisodeSpec(env_config("test/Faulty-v0"), "slow", sample=i) for i in range(16)]  # 0.5 s a step
    config = RunnerConfig(backend="ray", num_env_workers=4, concurrency=4, flush_every=1)
    finished = []

    def kill_the_second_node(trajectory) -> None:
        finished.append(trajectory)
        if len(finished) == 2:  # once the second node runs workers too (starting one takes seconds)
            deadline = time.monotonic() + 120
            while not any(f"started on ray node {second.node_id[:8]}" in r.getMessage() for r in caplog.records):
                assert time.monotonic() < deadline, "no env worker started on the second node in 120 s"
                time.sleep(0.05)
            cluster.remove_node(second, allow_graceful=False)

    result = Runner(OraclePolicy(), config).run(specs, out, on_episode=kill_the_second_node)
    started_on = {r.getMessage().split("ray node ")[1][:8] for r in caplog.records if "started on" in r.getMessage()}
    assert started_on == {cluster.head_node.node_id[:8], second.node_id[:8]}  # workers on both nodes
    ((node, what),) = result.lost.items()
    assert node.startswith(f"ray node {second.node_id[:8]} (") and what.startswith("left the cluster mid-run")
    assert result.episodes == 16 and result.failed == 0
    written = list(read_jsonl(out))
    assert sorted(t.id for t in written) == sorted(s.id for s in specs)  # each once: none lost, none twice
    assert {t.status for t in written} == {"ok"} and all(t.total_reward == 1.0 for t in written)
