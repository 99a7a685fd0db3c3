"""`backend="ray"`: env workers (and policy replicas) as Ray actors, on a local Ray instance."""

from __future__ import annotations

import pytest

ray = pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env  # noqa: E402
from gfcr.agents.runner.ray_backend import ray_policy  # noqa: E402
from gfcr.agents.runner.specs import EpisodeSpec, env_config  # noqa: E402


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray; a second try if the first start times out (Ray allows its raylet a fixed 30 s)."""
    for attempt in range(2):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
            break
        except Exception as e:
            ray.shutdown()
            if attempt == 1 or "timed out during startup" not in str(e):
                raise
    yield
    ray.shutdown()


@pytest.mark.timeout(240)
def test_env_workers_and_policy_replicas_as_ray_actors(local_ray):
    specs = episodes_for_env("gfcr/Math-v0", 12, kwargs={"split": "AIME2024"})
    config = RunnerConfig(backend="ray", num_env_workers=2, concurrency=6)
    result = Runner(OraclePolicy(), config).run(specs)
    assert result.episodes == 12 and result.solved == 12

    policy = ray_policy("scripted:oracle", replicas=2, num_cpus=0)
    result = Runner(policy, config).run(specs[:6])
    policy.close()
    assert result.solved == 6 and {t.provenance.policy for t in result.trajectories} == {"scripted:oracle"}
    assert policy.max_concurrent_batches == 2


@pytest.mark.timeout(240)
def test_an_env_error_in_a_ray_actor_fails_its_episode_with_the_traceback(local_ray):
    config = env_config("gfcr/Math-v0", {"split": "AIME2024", "no_such_option": 1})  # the env cannot be made
    specs = [EpisodeSpec(config, "mmath/AIME2024/0", sample=i) for i in range(2)]
    result = Runner(OraclePolicy(), RunnerConfig(backend="ray", num_env_workers=1)).run(specs)
    assert result.failed == 2
    assert all(
        t.failure.startswith("env error: ") and "no_such_option" in t.failure for t in result.trajectories
    )
