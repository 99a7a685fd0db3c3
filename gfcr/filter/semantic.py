"""Semantic clusters of a group's answers, by each env family's own equivalence check, and their entropy.

Semantic entropy (Farquhar et al. 2024, Nature 630) measures how much a group of K answers to
one prompt disagrees in *meaning*: answers the env would grade alike ("1/2", "0.5",
"\\frac{1}{2}") fall in one cluster. SEED-GRPO scales a group's advantages by it and the
uncertainty-aware budget gives high-entropy prompts more samples; TTRL's majority vote takes
the largest cluster as its label.

Each env family says how it reads a final answer and when two answers mean the same, as an
`AnswerFamily` registered under its env id prefix (`register_answers`). The GFCR modules know
no env, so the families register themselves when their package is imported (making their env
does it):

- `gfcr/Math-`: the answer the env extracted (none where its `answer_extracted` signal is
  False), compared by `gfcr.envs.math.is_equivalent`;
- `gfcr/SQL-`: every submission whose result matched the gold query's is one cluster (their
  result sets all equal the gold's); a wrong submission by its query text, whitespace- and
  case-normalised. The trajectory does not record result sets, so two different wrong queries
  with equal results count as two meanings (re-running them needs the task's database);
- any other env: the last action's text with whitespace collapsed, compared exactly.

A member that gave no answer (or whose episode failed: `status == "failed"`) has no cluster
label. `semantic_entropy` counts each answerless ok member as a cluster of its own: a group
that never commits to an answer is maximally uncertain, not certain. Failed episodes are left
out, as infrastructure failures are everywhere else.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from gfcr.core import Trajectory
from gfcr.errors import ConfigError


def _same(a: str, b: str) -> bool:
    return a == b


def last_action(trajectory: Trajectory) -> str | None:
    """The last action's text with whitespace collapsed, or None when it is empty (no answer).

    >>> from gfcr.core import Step
    >>> last_action(Trajectory("e", "t", "?", [Step("  42\\n ", "", 0.0, True, False)]))
    '42'
    """
    text = " ".join(trajectory.steps[-1].action.split()) if trajectory.steps else ""
    return text or None


@dataclass(frozen=True)
class AnswerFamily:
    """How one env family reads a final answer and decides that two answers mean the same.

    `answer(trajectory)` is None when the trajectory gave no answer; `equivalent(answer, other)`
    compares an answer with a cluster's first answer (in that order: a checker may read its
    second argument as the reference, as `is_equivalent(pred, gold)` does).
    """

    answer: Callable[[Trajectory], str | None] = last_action
    equivalent: Callable[[str, str], bool] = _same
    reads_gold: bool = False  # the clusters use the gold answer: no label-free vote may use them


_FAMILIES: dict[str, AnswerFamily] = {}
DEFAULT_FAMILY = AnswerFamily()


def register_answers(env_prefix: str, family: AnswerFamily) -> None:
    """Make `family` read and compare the answers of every env whose id starts with `env_prefix`.

    >>> register_answers("demo/Upper-", AnswerFamily(equivalent=lambda a, b: a.upper() == b.upper()))
    >>> answer_family("demo/Upper-v0").equivalent("yes", "YES")
    True
    """
    _FAMILIES[env_prefix] = family


def answer_family(env_id: str) -> AnswerFamily:
    """The family registered under the longest prefix of `env_id`, else `DEFAULT_FAMILY`."""
    prefixes = [prefix for prefix in _FAMILIES if env_id.startswith(prefix)]
    return _FAMILIES[max(prefixes, key=len)] if prefixes else DEFAULT_FAMILY


def answer_of(trajectory: Trajectory) -> str | None:
    """The final answer of `trajectory` as its env family reads it; None for none or a failed episode."""
    if trajectory.status == "failed":
        return None
    return answer_family(trajectory.env_id).answer(trajectory)


def answer_clusters(group: Sequence[Trajectory]) -> list[int | None]:
    """A cluster label per member of `group` (0, 1, … in order of first appearance); None: no answer.

    An answer joins the first cluster whose first answer its family finds equivalent, else it
    opens a new one: K members cost at most K × (number of clusters) comparisons.

    >>> from gfcr.core import Step
    >>> group = [Trajectory("e", "t", "?", [Step(a, "", 0.0, True, False)]) for a in ["4", "5", " 4", ""]]
    >>> answer_clusters(group)
    [0, 1, 0, None]
    """
    firsts: list[tuple[str, AnswerFamily]] = []  # each cluster's first answer and its family
    labels: list[int | None] = []
    for trajectory in group:
        answer = answer_of(trajectory)
        if answer is None:
            labels.append(None)
            continue
        same = (i for i, (first, family) in enumerate(firsts) if family.equivalent(answer, first))
        label = next(same, None)
        if label is None:
            label = len(firsts)
            firsts.append((answer, answer_family(trajectory.env_id)))
        labels.append(label)
    return labels


def vote_clusters(group: Sequence[Trajectory]) -> list[int | None]:
    """`answer_clusters` for a label-free vote (TTRL's `MajorityVote`): a `ConfigError` for an env
    whose family reads the gold answer to cluster (SQL), since the vote would then leak the label.

    >>> from gfcr.core import Step
    >>> vote_clusters([Trajectory("gfcr/SQL-v0", "t", "?", [Step("SELECT 1", "", 0.0, True, False)])])
    Traceback (most recent call last):
    ...
    gfcr.errors.ConfigError: a majority vote over gfcr/SQL-v0 would read its gold answer: ...
    """
    for env_id in dict.fromkeys(t.env_id for t in group):
        if answer_family(env_id).reads_gold:
            raise ConfigError(
                f"a majority vote over {env_id} would read its gold answer: its answers are clustered "
                "by matching the gold result (the trajectory records no result sets), so the vote is "
                "not label-free; reward this env with its verifier ([judge] verifier, or "
                f'[judge.envs."{env_id}"] without [judge.majority])'
            )
    return answer_clusters(group)


def cluster_entropy(labels: Sequence[int | None]) -> float:
    """Entropy (nats) of the empirical cluster distribution; each None is a cluster of its own.

    >>> round(cluster_entropy([0, 0, 1, None]), 4)  # p = (1/2, 1/4, 1/4)
    1.0397
    >>> cluster_entropy([0, 0, 0]), cluster_entropy([])
    (0.0, 0.0)
    """
    counts = list(Counter(label for label in labels if label is not None).values())
    counts += [1] * sum(label is None for label in labels)
    total = sum(counts)
    return math.fsum(n / total * math.log(total / n) for n in counts) if total else 0.0


def semantic_entropy(group: Sequence[Trajectory]) -> float:
    """Semantic entropy (nats) of `group`'s answers: 0 when all agree, ln K when all differ.

    Failed episodes are left out; an ok member without an answer is a cluster of its own.
    Frequencies stand in for the clusters' probabilities (the "discrete" estimator of Farquhar
    et al.), so no sequence likelihoods are needed.

    >>> from gfcr.core import Step
    >>> group = [Trajectory("e", "t", "?", [Step(a, "", 0.0, True, False)]) for a in ["4", "4", "5", "6"]]
    >>> round(semantic_entropy(group), 4)  # p = (1/2, 1/4, 1/4)
    1.0397
    """
    return cluster_entropy(answer_clusters([t for t in group if t.status != "failed"]))


def normalised_entropy(group: Sequence[Trajectory]) -> float:
    """`semantic_entropy` over its most, ln G for the G members it counts: in [0, 1]; 0 below two.

    >>> from gfcr.core import Step
    >>> group = [Trajectory("e", "t", "?", [Step(a, "", 0.0, True, False)]) for a in ["4", "4", "5", "6"]]
    >>> normalised_entropy(group)  # 1.5 ln 2 of ln 4
    0.75
    """
    answers = sum(t.status != "failed" for t in group)
    return semantic_entropy(group) / math.log(answers) if answers >= 2 else 0.0
