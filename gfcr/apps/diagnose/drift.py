"""`proposal_drift`: the tasks a run's policy proposed (`[propose]`), over training, from its
provenance store (`out_dir/proposals.db`) and its `propose/` metrics.

Rounds are the propose stage's steps (`ProvenanceRecord.step_proposed`; the metrics' `propose/step`
ties them to training steps), grouped into at most `WINDOWS` windows of equal length. Each window:
proposals and their verdicts (`guessable`: solved hardly more often than guessed with the question
withheld, `ProvenanceRecord.blind_success`); the generated tasks in the pool at its end, their share of the
family's pool and of the groups trained (`propose/pool_share`, `propose/trained_share`);
difficulty, as the mean solver success of the tasks added; and verifier agreement, two ways:

- `claimed_agreement`: the proposer's claimed answer against the executed one. Only math
  proposals claim one (`<answer>` beside the program); a code proposal's claim — its reference
  passes its tests — and a SQL one's — its gold query runs and returns rows — are what makes it
  valid at all, so there is nothing left to disagree: None for them;
- `rerun_agreement`: the proposal's check executed a second time gave the same result (the answer
  program, the reference solution against the tests, the gold query), for every family.

Drift is flagged when generated tasks crowd the pool, verified proposals leave the learnability
band or are mostly guessable, the added tasks' difficulty moves, claims disagree with execution, or
a check is not repeatable.

>>> from gfcr.proposals import ProvenanceRecord
>>> def proposal(n, verdict, success=None, claimed=None):
...     return ProvenanceRecord(f"gen/{n}", "gfcr/Math-v0", "?", "", "0", (), verdict, "", step_proposed=n,
...                             solver_success=success, claimed_agrees=claimed, rerun_agrees=True,
...                             step_added=n if verdict == "valid" else None)
>>> found = proposal_drift([proposal(0, "valid", 0.5, True), proposal(1, "trivial", 1.0, False)], [])
>>> [(row["rounds"], row["valid"], row["trivial"], row["added_success"]) for row in found["rows"]]
[('0', 1, 0, 0.5), ('1', 0, 1, None)]
>>> found["claimed_agreement"], found["rerun_agreement"], len(found["flags"])
(0.5, 1.0, 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from rich import box
from rich.table import Table

from gfcr.apps.diagnose.pathology import share
from gfcr.proposals import REJECTIONS, ProvenanceRecord

WINDOWS = 10  # rows at most
VERDICTS = ("valid", *REJECTIONS)
POOL_SHARE_LIMIT = 0.5  # generated tasks above this share of the family's pool crowd out the seed tasks
OUT_OF_BAND_LIMIT = 0.5  # verified proposals outside the band above this share: the proposer left it
GUESSABLE_LIMIT = 0.5  # guessable proposals above this share of the verified: the proposer games the guess
DIFFICULTY_SHIFT = 0.25  # the added tasks' mean solver success moving this much, first to last window
CLAIMED_AGREEMENT_FLOOR = 0.8  # claimed answers agreeing less often than this with the executed ones
# each row's columns, with the terminal table's (short) headers
COLUMNS = {
    "rounds": "rounds", "train_steps": "steps", "proposed": "n", "valid": "valid", "invalid": "invalid",
    "duplicate": "dup", "trivial": "trivial", "too_hard": "hard", "guessable": "guess", "in_pool": "active",
    "pool_share": "pool", "trained_share": "trained", "added_success": "success",
    "claimed_agreement": "claimed", "rerun_agreement": "rerun",
}  # fmt: skip


def proposal_drift(
    records: Sequence[ProvenanceRecord], metrics: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The drift section (see the module): `rows` (one per window), overall counts and agreements,
    `flags` (sentences, one per drift found) and a `summary` sentence."""
    rounds = max((r.step_proposed for r in records), default=-1) + 1
    window = max(1, math.ceil(rounds / WINDOWS))
    by_round = _metrics_by_round(metrics)
    rows = [_row(records, by_round, lo, min(lo + window, rounds) - 1) for lo in range(0, rounds, window)]
    verdicts = {v: sum(r.verdict == v for r in records) for v in VERDICTS}
    found: dict[str, Any] = {
        "rounds": rounds,
        "window": window,
        "proposals": len(records),
        "verdicts": verdicts,
        "claimed_agreement": _agreement(records, lambda r: r.claimed_agrees),
        "rerun_agreement": _agreement(records, lambda r: r.rerun_agrees),
        "claimed_agreement_note": "math only: code and SQL proposals claim nothing beyond what verifies them",
        "rows": rows,
    }
    found["flags"] = _flags(found, records)
    found["summary"] = _summary(found)
    return found


def _metrics_by_round(metrics: Sequence[Mapping[str, Any]]) -> dict[int, Mapping[str, Any]]:
    """The logged metrics of each propose round (`propose/step`), with the training step."""
    return {int(m["propose/step"]): m for m in metrics if isinstance(m.get("propose/step"), int | float)}


def _row(
    records: Sequence[ProvenanceRecord], by_round: Mapping[int, Mapping[str, Any]], lo: int, hi: int
) -> dict[str, Any]:
    """One window of rounds lo..hi."""
    inside = [r for r in records if lo <= r.step_proposed <= hi]
    logged = [by_round[n] for n in range(lo, hi + 1) if n in by_round]
    added = [r.solver_success for r in inside if r.verdict == "valid" and r.solver_success is not None]
    pool = [m["propose/pool_share"] for m in logged if "propose/pool_share" in m]
    trained = [m["propose/trained_share"] for m in logged if "propose/trained_share" in m]
    steps = [int(m["step"]) for m in logged if "step" in m]
    in_pool = [
        r
        for r in records
        if r.step_added is not None and r.step_added <= hi and (r.step_retired or hi + 1) > hi
    ]
    return {
        "rounds": str(lo) if lo == hi else f"{lo}-{hi}",
        "train_steps": (str(steps[0]) if len(set(steps)) == 1 else f"{steps[0]}-{steps[-1]}")
        if steps
        else None,
        "proposed": len(inside),
        **{v: sum(r.verdict == v for r in inside) for v in VERDICTS},
        "in_pool": len(in_pool),
        "pool_share": round(float(pool[-1]), 4) if pool else None,  # at the window's end
        "trained_share": round(float(np.mean(trained)), 4) if trained else None,
        "added_success": round(float(np.mean(added)), 4) if added else None,
        "claimed_agreement": _agreement(inside, lambda r: r.claimed_agrees),
        "rerun_agreement": _agreement(inside, lambda r: r.rerun_agrees),
    }


def _agreement(
    records: Sequence[ProvenanceRecord], agrees: Callable[[ProvenanceRecord], bool | None]
) -> float | None:
    """The share of the records that say (not None) which agree; None where none says."""
    said = [a for r in records if (a := agrees(r)) is not None]
    return share(sum(said), len(said)) if said else None


def _flags(found: dict[str, Any], records: Sequence[ProvenanceRecord]) -> list[str]:
    rows = found["rows"]
    flags = []
    pool = [row["pool_share"] for row in rows if row["pool_share"] is not None]
    if pool and pool[-1] > POOL_SHARE_LIMIT:
        flags.append(
            f"generated tasks are {pool[-1]:.0%} of the family's pool at the end "
            f"(above {POOL_SHARE_LIMIT:.0%}): they crowd out the seed tasks; "
            "lower [propose] max_age or proposals_per_step"
        )
    solved = [row for row in rows if row["valid"] + row["trivial"] + row["too_hard"] + row["guessable"]]
    if solved:
        last = solved[-1]
        out = last["trivial"] + last["too_hard"]
        verified = out + last["valid"] + last["guessable"]
        if out / verified > OUT_OF_BAND_LIMIT:
            flags.append(
                f"in rounds {last['rounds']}, {out} of {verified} verified proposals left the "
                f"learnability band ({last['trivial']} trivial, {last['too_hard']} too hard): the proposer "
                "no longer writes tasks the solver learns from"
            )
        if last["guessable"] / verified > GUESSABLE_LIMIT:
            flags.append(
                f"in rounds {last['rounds']}, {last['guessable']} of {verified} verified proposals were "
                "guessable (solved hardly more often than guessed with the question withheld): the "
                "proposer writes tasks whose answers are guessed, not worked out"
            )
    difficulty = [row["added_success"] for row in rows if row["added_success"] is not None]
    if len(difficulty) > 1 and abs(difficulty[-1] - difficulty[0]) > DIFFICULTY_SHIFT:
        flags.append(
            f"the added tasks' solver success moved {difficulty[0]:.2f} → {difficulty[-1]:.2f}: "
            f"their difficulty drifted (more than {DIFFICULTY_SHIFT} from the first window to the last)"
        )
    claimed = [row for row in rows if row["claimed_agreement"] is not None]
    if claimed and claimed[-1]["claimed_agreement"] < CLAIMED_AGREEMENT_FLOOR:
        flags.append(
            f"in rounds {claimed[-1]['rounds']} the proposer's claimed answers agree with its programs' "
            f"{claimed[-1]['claimed_agreement']:.0%} of the time (below {CLAIMED_AGREEMENT_FLOOR:.0%}): "
            "it writes programs it does not understand"
        )
    flaky = [r.id for r in records if r.rerun_agrees is False]
    if flaky:
        flags.append(
            f"{len(flaky)} proposals' checks gave another result when executed again (e.g. {flaky[0]}): "
            "their verification is not repeatable (randomness, the clock, or a time limit near its edge)"
        )
    return flags


def _summary(found: dict[str, Any]) -> str:
    verdicts = found["verdicts"]
    counts = ", ".join(f"{n} {v}" for v, n in verdicts.items() if n)
    rows = found["rows"]
    parts = [f"{found['proposals']} proposals over {found['rounds']} rounds ({counts or 'none'})."]
    pool = [row["pool_share"] for row in rows if row["pool_share"] is not None]
    trained = [row["trained_share"] for row in rows if row["trained_share"] is not None]
    if pool and trained:
        parts.append(
            f"Generated tasks: {pool[-1]:.0%} of the family's pool at the end, {np.mean(trained):.0%} of "
            "the groups trained."
        )
    difficulty = [row["added_success"] for row in rows if row["added_success"] is not None]
    if difficulty:
        parts.append(
            f"Solver success of the tasks added: {difficulty[0]:.2f} first, {difficulty[-1]:.2f} last."
        )
    agreements = [
        f"{label} {found[key]:.0%}"
        for key, label in (
            ("claimed_agreement", "claimed answers"),
            ("rerun_agreement", "re-executed checks"),
        )
        if found[key] is not None
    ]
    if agreements:
        parts.append(f"Verifier agreement: {', '.join(agreements)}.")
    return " ".join(parts)


def drift_table(found: dict[str, Any]) -> Table:
    """`proposal_drift`'s rows as a rich table, one row per window (guess: guessable proposals;
    pool, trained: generated tasks' share of the family's pool and of the groups trained; success:
    of the tasks added; claimed, rerun: verifier agreement)."""
    table = Table(
        title=f"generated tasks (proposals.db) · {found['window']} round(s) a row",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for column, header in COLUMNS.items():
        table.add_column(header, justify="left" if column == "rounds" else "right", no_wrap=True)
    for row in found["rows"]:
        table.add_row(*("—" if row[c] is None else str(row[c]) for c in COLUMNS))
    return table
