"""Peer side of `benchmarks/math_env.py`: GEM's and SkyRL-gym's math envs, timed in their own venv.

Run by `math_env.py` as `benchmarks/.venv-peers/bin/python benchmarks/_math_peers.py`, with a
JSON job on stdin (problems, answers to time, labelled pairs) and one JSON object on stdout (one
result per peer system). `math_env.py` imports the timing helpers from here too, so every system
is timed by the same loop; this module's top level therefore imports the standard library only.

Peers, as they run an episode in their own trainers (no dataset download: problems come in memory):
- GEM (`gem-llm`): `gem.envs.math_env.MathEnv(dataset=datasets.Dataset.from_list(...), eval=True)`,
  `reset(idx=i)` then `step(response)`; reward 1 for a correct last `\\boxed{}`. By default
  (`use_mp=True`) the grader runs in a one-process pool with a 1 s timeout; `use_mp=False`
  grades in-process under a SIGALRM timeout.
- SkyRL-gym (`skyrl-gym`): a new env per episode, as `SkyRLGymGenerator` makes them:
  `skyrl_gym.make("aime" | "gsm8k", env_config=DictConfig({}), extras={...ground_truth})`,
  `init(prompt)`, `step(response)`, `close()`. `aime` (`AIMEEnv`) grades the last `Answer: X`
  line (Minerva normalisation, exact string match); `gsm8k` (`GSM8kEnv`) the number after `####`.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

UNIQUE_PASSES = 100  # distinct response texts per problem in one timed run (more than any cache here holds)

# (problem index, full model response) -> whether the system judged the answer correct.
Episode = Callable[[int, str], bool]

# The same reasoning text for every system; only the final-answer line follows each system's format.
# The attempt number makes every timed response unique, so a cache keyed on the response cannot help.
REASONING = "[attempt {attempt}] Let me work through the problem step by step. After simplifying,"
ANSWER_FORMATS: dict[str, str] = {
    "boxed": "{reasoning} so the answer is \\boxed{{{answer}}}.",  # gfcr, GEM, math-verify
    "minerva": "{reasoning} so the answer is as follows.\nAnswer: {answer}",  # SkyRL-gym aime
    "gsm8k": "{reasoning} so the answer is as follows.\n#### {answer}",  # SkyRL-gym gsm8k
}


def render(answer_format: str, answer: str, attempt: int = 0) -> str:
    """Full model response ending in `answer` written the way `answer_format` expects."""
    reasoning = REASONING.format(attempt=attempt)
    return ANSWER_FORMATS[answer_format].format(reasoning=reasoning, answer=answer)


def strip_dollars(gold: str) -> str:
    """`$\\frac{3}{4}$` -> `\\frac{3}{4}`: the answer the way datasets such as MATH-500 store it."""
    gold = gold.strip()
    if len(gold) >= 2 and gold[0] == gold[-1] == "$":
        return gold[1:-1].strip()
    return gold


@dataclass
class Throughput:
    """Episodes per second over a fixed number of episodes: the median of `repeats` timed runs."""

    episodes_per_s: float
    episodes: int  # per timed run
    seconds: float  # of the median run
    runs_episodes_per_s: list[float]  # every timed run
    first_pass_episodes_per_s: float  # each problem's first timed episode (gold-side caches cold)
    judged_correct: int  # episodes of the median run the system judged correct


@dataclass
class Agreement:
    """A checker's verdicts against the labelled set (positive = labelled correct)."""

    pairs: int
    accuracy: float
    true_positives: int
    false_positives: int  # wrong answers accepted
    false_negatives: int  # correct answers rejected
    true_negatives: int
    accepted_by_form: dict[str, list[int]] = field(default_factory=dict)  # form -> [accepted, total]


def measure_throughput(
    episode: Episode,
    answers: list[str],
    answer_format: str,
    min_seconds: float,
    warmup: int,
    repeats: int = 3,
) -> Throughput:
    """Time `episode` over every problem (answer `answers[i]` for problem i), repeated to fill `min_seconds`.

    Warm-up: the first `warmup` problems, untimed. Then one timed pass over all problems (reported as
    the first pass), a second one that fixes the number of passes of each timed run (at least one),
    and `repeats` timed runs of that fixed episode count; single process, median run reported.
    """
    n = len(answers)
    attempts = itertools.count()

    def run_passes(passes: int) -> tuple[float, int]:
        # Responses are built before the clock starts; the fastest systems need millions of episodes,
        # so at most UNIQUE_PASSES distinct passes (37,400 responses) are cycled through.
        unique = min(passes, UNIQUE_PASSES)
        batches = [[render(answer_format, a, next(attempts)) for a in answers] for _ in range(unique)]
        judged_correct = 0
        start = time.perf_counter()
        for p in range(passes):
            for i, response in enumerate(batches[p % unique]):
                judged_correct += episode(i, response)
        return time.perf_counter() - start, int(judged_correct)

    warm = [render(answer_format, a, next(attempts)) for a in answers[:warmup]]
    for i, response in enumerate(warm):
        episode(i, response)
    first_seconds, _ = run_passes(1)
    calibration_seconds, _ = run_passes(1)
    passes = max(1, math.ceil(min_seconds / max(calibration_seconds, 1e-9)))
    runs = sorted(run_passes(passes) for _ in range(max(1, repeats)))
    seconds, judged_correct = runs[len(runs) // 2]
    return Throughput(
        episodes_per_s=passes * n / seconds,
        episodes=passes * n,
        seconds=seconds,
        runs_episodes_per_s=[passes * n / run_seconds for run_seconds, _ in runs],
        first_pass_episodes_per_s=n / first_seconds,
        judged_correct=judged_correct,
    )


def measure_agreement(episode: Episode, pairs: list[dict[str, Any]], answer_format: str) -> Agreement:
    """Run one episode per labelled pair and compare the verdicts with the labels."""
    tp = fp = fn = tn = 0
    by_form: dict[str, list[int]] = {}
    for pair in pairs:
        accepted = bool(episode(pair["problem"], render(answer_format, pair["prediction"])))
        counts = by_form.setdefault(pair["form"], [0, 0])
        counts[0] += accepted
        counts[1] += 1
        if pair["label"]:
            tp, fn = tp + accepted, fn + (not accepted)
        else:
            fp, tn = fp + accepted, tn + (not accepted)
    return Agreement(
        pairs=len(pairs),
        accuracy=(tp + tn) / max(len(pairs), 1),
        true_positives=tp,
        false_positives=fp,
        false_negatives=fn,
        true_negatives=tn,
        accepted_by_form=by_form,
    )


# --------------------------------------------------------------------------------------- peers


def gem_math_env(problems: list[dict[str, str]], use_mp: bool) -> tuple[Episode, Callable[[], None]]:
    """GEM's `MathEnv` over an in-memory `datasets.Dataset`; `eval=True` keeps the problem order."""
    from datasets import Dataset
    from gem.envs.math_env import MathEnv

    # `import gem` sets the root logger to INFO, and `reset(idx=i)` then writes a line per episode
    # (a trainer's plain `reset()` does not): back to WARNING, so reset(idx) costs what reset() does.
    logging.getLogger().setLevel(logging.WARNING)
    rows = [{"problem": p["question"], "answer": strip_dollars(p["gold"])} for p in problems]
    env = MathEnv(dataset=Dataset.from_list(rows), use_mp=use_mp, eval=True)

    def episode(i: int, response: str) -> bool:
        env.reset(idx=i)
        _, reward, _, _, _ = env.step(response)
        return reward == 1

    # MathEnv.close() only knows the use_mp=True case (it closes the pool).
    return episode, env.close if use_mp else (lambda: None)


def gem_check_correct(problems: list[dict[str, str]]) -> tuple[Episode, Callable[[], None]]:
    """GEM's grader alone: `MathEnv.check_correct(response, gold)` (what `step` runs, minus the timeout)."""
    from gem.envs.math_env import MathEnv

    golds = [strip_dollars(p["gold"]) for p in problems]

    def episode(i: int, response: str) -> bool:
        return bool(MathEnv.check_correct(response, golds[i]))

    return episode, lambda: None


def skyrl_env(problems: list[dict[str, str]], env_id: str) -> tuple[Episode, Callable[[], None]]:
    """A SkyRL-gym env made per episode, the way `SkyRLGymGenerator` does: make, init, step, close."""
    import skyrl_gym
    from omegaconf import DictConfig

    env_config = DictConfig({})
    # `aime` reads extras["reward_model"], `gsm8k` extras["reward_spec"].
    extras_key = "reward_model" if env_id == "aime" else "reward_spec"
    golds = [strip_dollars(p["gold"]) for p in problems]
    prompts = [[{"role": "user", "content": p["question"]}] for p in problems]

    def episode(i: int, response: str) -> bool:
        extras = {extras_key: {"method": "rule", "ground_truth": golds[i]}}
        env = skyrl_gym.make(env_id, env_config=env_config, extras=extras)
        env.init(prompts[i])
        output = env.step(response)
        env.close()
        return output["reward"] == 1.0  # aime: 1.0 / -1.0, gsm8k: 1.0 / 0.0

    return episode, lambda: None


def skyrl_compute_score(problems: list[dict[str, str]], env_id: str) -> tuple[Episode, Callable[[], None]]:
    """SkyRL-gym's scoring function alone (`envs/<env_id>/utils.compute_score`), without the env."""
    import importlib

    utils = importlib.import_module(f"skyrl_gym.envs.{env_id}.utils")
    golds = [strip_dollars(p["gold"]) for p in problems]

    if env_id == "aime":

        def episode(i: int, response: str) -> bool:
            return bool(utils.compute_score(response, golds[i])["acc"])

    else:

        def episode(i: int, response: str) -> bool:
            return utils.compute_score(response, golds[i]) == 1.0

    return episode, lambda: None


@dataclass
class PeerSystem:
    """One peer measurement: how to build its episode function and what it is."""

    name: str
    kind: str  # "env" (a full episode) or "checker" (the grading function alone)
    answer_format: str
    what: str  # the exact classes / calls timed
    build: Callable[[list[dict[str, str]]], tuple[Episode, Callable[[], None]]]


PEERS: list[PeerSystem] = [
    PeerSystem(
        "GEM MathEnv (use_mp=True, default)",
        "env",
        "boxed",
        "gem.envs.math_env.MathEnv(dataset=Dataset.from_list(..), eval=True): reset(idx=i); step(text)",
        lambda problems: gem_math_env(problems, use_mp=True),
    ),
    PeerSystem(
        "GEM MathEnv (use_mp=False)",
        "env",
        "boxed",
        "same, MathEnv(..., use_mp=False): grading in-process under a SIGALRM timeout",
        lambda problems: gem_math_env(problems, use_mp=False),
    ),
    PeerSystem(
        "GEM check_correct",
        "checker",
        "boxed",
        "gem.envs.math_env.MathEnv.check_correct(text, gold)",
        gem_check_correct,
    ),
    PeerSystem(
        "SkyRL-gym aime",
        "env",
        "minerva",
        'skyrl_gym.make("aime", env_config, extras) -> AIMEEnv; init(prompt); step(text); close()',
        lambda problems: skyrl_env(problems, "aime"),
    ),
    PeerSystem(
        "SkyRL-gym aime compute_score",
        "checker",
        "minerva",
        "skyrl_gym.envs.aime.utils.compute_score(text, gold)",
        lambda problems: skyrl_compute_score(problems, "aime"),
    ),
    PeerSystem(
        "SkyRL-gym gsm8k",
        "env",
        "gsm8k",
        'skyrl_gym.make("gsm8k", env_config, extras) -> GSM8kEnv; init(prompt); step(text); close()',
        lambda problems: skyrl_env(problems, "gsm8k"),
    ),
    PeerSystem(
        "SkyRL-gym gsm8k compute_score",
        "checker",
        "gsm8k",
        "skyrl_gym.envs.gsm8k.utils.compute_score(text, gold)",
        lambda problems: skyrl_compute_score(problems, "gsm8k"),
    ),
]


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in ("gem-llm", "skyrl-gym", "math-verify", "datasets", "sympy", "latex2sympy2_extended"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "missing"
    return found


def run_job(job: dict[str, Any]) -> dict[str, Any]:
    """Measure every peer in `PEERS` (or those named in `job["systems"]`) on the job's problems."""
    problems, pairs = job["problems"], job["pairs"]
    wanted = set(job.get("systems") or [peer.name for peer in PEERS])
    results = []
    for peer in PEERS:
        if peer.name not in wanted:
            continue
        print(f"[peers] {peer.name} ...", file=sys.stderr, flush=True)
        episode, close = peer.build(problems)
        try:
            speed = {
                kind: asdict(
                    measure_throughput(
                        episode,
                        answers,
                        peer.answer_format,
                        job["min_seconds"],
                        job["warmup"],
                        job["repeats"],
                    )
                )
                for kind, answers in job["timing"].items()
            }
            agreement = asdict(measure_agreement(episode, pairs, peer.answer_format))
        finally:
            close()
        results.append(
            {
                "name": peer.name,
                "kind": peer.kind,
                "peer": True,
                "answer_format": peer.answer_format,
                "what": peer.what,
                "throughput": speed,
                "agreement": agreement,
            }
        )
    # Format check: SkyRL-gym's aime env given the `\boxed{}` responses every other system reads.
    episode, _ = skyrl_env(problems, "aime")
    boxed_accepted = sum(
        episode(i, render("boxed", answer)) for i, answer in enumerate(job["timing"]["correct"])
    )
    notes = {"skyrl_aime_accepts_boxed_correct": [int(boxed_accepted), len(problems)]}
    return {"versions": _versions(), "python": sys.version.split()[0], "results": results, "notes": notes}


def main() -> None:
    job = json.load(sys.stdin)
    # Peers may print or log; keep stdout for the one JSON answer.
    with contextlib.redirect_stdout(sys.stderr):
        answer = run_job(job)
    json.dump(answer, sys.stdout)


if __name__ == "__main__":
    main()
