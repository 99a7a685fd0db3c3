"""`SWEVerifier`: the SWE env's verdict as a Filter `Verifier`, for live episodes and saved ones.

It judges a diff for a task in a fresh sandbox (`gfcr.envs.swe.evaluation.evaluate`); from a
trajectory it takes the diff the env recorded on the final step (`Step.state["patch"]`, see
`final_state`), so a saved `.jsonl` episode is re-judged offline exactly as it was judged live.

>>> from gfcr.core import Step, Trajectory
>>> from gfcr.envs.swe.data import load_tasks
>>> task = load_tasks("inflection", "local", tasks_per_project=2)[0]
>>> final = Step("", "", 1.0, True, False, state={"patch": task.gold})
>>> saved = Trajectory("gfcr/SWE-v0", task.id, "?", [final])
>>> SWEVerifier("local").verify(task, saved).passed
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gfcr.core import Task, Trajectory, Verdict
from gfcr.envs.swe import diffs
from gfcr.envs.swe.data import snapshot_of
from gfcr.envs.swe.evaluation import VERDICT_LIMITS, Resolution, evaluate
from gfcr.errors import SandboxError
from gfcr.sandboxes import Limits, Sandbox
from gfcr.sandboxes.factory import shared_sandbox

NO_PATCH_SIGNALS = {
    "resolved": False,
    "patch_applied": False,
    "fail_to_pass": 0.0,
    "pass_to_pass": 0.0,
    "tampered": False,
}


def final_state(patch: str) -> dict[str, str]:
    """What an episode records of its diff: `{"patch": diff}`, or for a diff over
    `diffs.MAX_PATCH_CHARS` (which the verdict refuses) `{"patch": "", "patch_omitted": summary}`.

    >>> final_state("x" * (diffs.MAX_PATCH_CHARS + 1))["patch_omitted"]
    'a diff of 262,145 characters changing 0 files ()'
    """
    if len(patch) <= diffs.MAX_PATCH_CHARS:
        return {"patch": patch}
    return {"patch": "", "patch_omitted": diffs.summary(patch)}


@dataclass
class SWEVerifier:
    """Reward 1.0 when a diff resolves the task (every fail-to-pass test passes, every
    pass-to-pass test still does), else 0.0. `sandbox`: a `Sandbox`, or a backend name for the
    process's shared one (made on first use)."""

    sandbox: Sandbox | str = "auto"
    limits: Limits = field(default=VERDICT_LIMITS)

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        final = trajectory.steps[-1].state if trajectory.steps else None
        if not final or not isinstance(final.get("patch"), str):
            return Verdict(0.0, False, {**NO_PATCH_SIGNALS, "touched_tests": False, "state_ok": False})
        try:
            if final.get("patch_omitted"):
                meta = task.metadata
                refusal = f"the diff was refused: the changes were {final['patch_omitted']}, over the limit"
                resolution = Resolution.refused(meta["fail_to_pass"], meta["pass_to_pass"], refusal)
            else:
                resolution = self.judge(task, final["patch"])
        except SandboxError:
            return Verdict(0.0, False, {**NO_PATCH_SIGNALS, "touched_tests": False, "state_ok": False})
        return Verdict(
            1.0 if resolution.resolved else 0.0,
            resolution.resolved,
            {**resolution.signals(), "state_ok": True},
        )

    def judge(self, task: Task, patch: str) -> Resolution:
        """The verdict on `patch` (a unified diff of the agent's changes) for `task`."""
        meta = task.metadata
        return evaluate(
            self.grader(),
            snapshot_of(task),
            patch,
            meta["fail_to_pass"],
            meta["pass_to_pass"],
            setup_patch=meta.get("setup_patch", ""),
            test_patch=meta.get("test_patch", ""),
            limits=self.limits,
        )

    def grader(self) -> Sandbox:
        """The sandbox that judges (the shared one is made on first use, not with the verifier)."""
        if isinstance(self.sandbox, str):
            self.sandbox = shared_sandbox(self.sandbox)
        return self.sandbox
