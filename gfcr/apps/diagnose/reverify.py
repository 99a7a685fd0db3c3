"""Re-judging: run each trajectory's env verifier again, offline, on the same final work.

The verifier is the env's own (`env.unwrapped.verifier`: Math, Code, SQL) or its family's offline
verifier (Browser: from the recorded final state; Dialogue: from the conversation). Each episode
is judged `repeats` times: verdicts that differ from each other are flakiness (`noisy_signals`),
a stable verdict below the recorded reward is a reward the verifier does not back
(`reward_hacking`). Envs whose verifier cannot be built, or tasks it does not know, are skipped
and counted.

>>> from gfcr.core import Step
>>> t = Trajectory("gfcr/Math-v0", "mmath/AIME2024/0", "?", [Step("\\\\boxed{204}", "", 1.0, True, False)])
>>> result = reverify({"run": [t]}, repeats=2)
>>> result.verdicts[("run", t.id)], result.skipped
([1.0, 1.0], {})
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from gfcr.core import Trajectory, Verifier

logger = logging.getLogger(__name__)


@dataclass
class Reverification:
    """The re-judged rewards of each (run, trajectory id), and why others were skipped (reason -> count)."""

    verdicts: dict[tuple[str, str], list[float]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    repeats: int = 1

    def only(self, run: str) -> Reverification:
        """The verdicts of `run`'s episodes alone."""
        return Reverification({k: v for k, v in self.verdicts.items() if k[0] == run}, {}, self.repeats)

    def disagreements(self) -> list[tuple[str, str]]:
        """(run, id) of the episodes whose re-judged verdicts differ from each other (flakiness)."""
        return [key for key, rewards in self.verdicts.items() if len(set(rewards)) > 1]


def reverify(
    runs: Mapping[str, Sequence[Trajectory]],
    *,
    repeats: int = 2,
    env_kwargs: Mapping[str, Sequence[dict[str, Any]]] | None = None,
    episode_kwargs: Mapping[str, dict[str, Any]] | None = None,
) -> Reverification:
    """Judge every finished episode of `runs` `repeats` times with its env's verifier.

    An episode whose own keywords are known (`episode_kwargs`: episode id -> gym.make keywords, as
    a bench report records them; `Trajectory.remote` for one played through `gfcr/Remote-v0`, whose
    served env is then made here) is judged by the env made with exactly those: one task id may run
    under several configurations (SQL multi-turn and single-turn) that judge differently. Other
    episodes are judged by the first keyword set of their env id (`env_kwargs`) that knows the task.
    """
    result, skipped = Reverification(repeats=repeats), Counter[str]()
    envs: dict[tuple[str, str], list[tuple[Any, Verifier]]] = {}
    for run, trajectories in runs.items():
        for t in trajectories:
            if t.status != "ok" or not t.steps:
                continue
            # played on an env server: its env's own keywords (a report holds the client's, `url`)
            own = t.remote["kwargs"] if t.remote else (episode_kwargs or {}).get(t.id.split(".")[0])
            kwarg_sets = [own] if own is not None else (env_kwargs or {}).get(t.env_id) or [{}]
            key = (t.env_id, json.dumps(kwarg_sets, sort_keys=True, default=str))
            if key not in envs:
                envs[key] = open_verifiers(t.env_id, kwarg_sets)
            found = find_task(envs[key], t.task_id)
            if not envs[key]:
                skipped[f"{t.env_id}: no offline verifier"] += 1
            elif found is None:  # a task of other env keywords (give them with --env-arg)
                skipped[f"{t.env_id}: task not found (pass the run's env keywords with -e)"] += 1
            else:
                _, task, verifier = found
                result.verdicts[(run, t.id)] = [
                    float(verifier.verify(task, t).reward) for _ in range(repeats)
                ]
    for opened in envs.values():
        for env, _ in opened:
            env.close()
    result.skipped = dict(skipped)
    return result


def find_task(opened: list[tuple[Any, Verifier]], task_id: str) -> tuple[Any, Any, Verifier] | None:
    """(env, task, verifier) of the first opened env whose tasks hold `task_id`; None if none does."""
    for env, verifier in opened:
        try:
            return env, env.unwrapped.tasks.get(task_id), verifier
        except Exception:  # not among this keyword set's tasks: try the next
            continue
    return None


def open_verifiers(env_id: str, kwarg_sets: Sequence[dict[str, Any]]) -> list[tuple[Any, Verifier]]:
    """(env, verifier) of `env_id` made with each keyword set, those that cannot be made or have
    no offline verifier left out; the caller closes the envs."""
    opened = [_open(env_id, kwargs) for kwargs in kwarg_sets]
    return [(env, verifier) for env, verifier in opened if verifier is not None]


def _open(env_id: str, kwargs: dict[str, Any]) -> tuple[Any, Verifier | None]:
    """The env (for its tasks) and its verifier; (None, None) when the env cannot be made."""
    try:
        env = gym.make(env_id, **kwargs)
    except Exception as e:  # an unregistered or unbuildable env: its episodes are skipped
        logger.warning("re-judging: cannot make %s (%s); its episodes are skipped", env_id, e)
        return None, None
    verifier = getattr(env.unwrapped, "verifier", None)
    if not isinstance(verifier, Verifier):
        verifier = _family_verifier(env_id)
    if verifier is None:
        env.close()
    return env, verifier


def _family_verifier(env_id: str) -> Verifier | None:
    """The offline verifier of an env family whose env holds none as an attribute."""
    if env_id == "gfcr/Browser-v0":
        from gfcr.envs.browser import BrowserVerifier

        return BrowserVerifier()
    if env_id == "gfcr/Dialogue-v0":
        from gfcr.envs.dialogue import DialogueVerifier

        return DialogueVerifier()
    return None
