"""A judge measured against the verifier (`gfcr diagnose --calibrate --judge`): exact agreement,
false passes and failures from scripted judges, and the tiny model as a real judge whose junk
replies are counted as failures, never scored 0."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable

from typer.testing import CliRunner

from gfcr.agents import RandomPolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.apps.cli import app
from gfcr.apps.diagnose import diagnose, load_run
from gfcr.core import write_jsonl
from gfcr.core.policy import Completion
from gfcr.filter import GroupJudge, LLMJudge

SPLIT = {"split": "AIME2024"}


class ScriptedJudge:
    """A real policy answering each judge prompt with `verdict(reference, responses)`'s line."""

    def __init__(self, verdict: Callable[[str, dict[str, str]], str]) -> None:
        self.name, self.version = f"calibration-judge-{uuid.uuid4().hex[:8]}", "1"
        self.verdict = verdict

    def generate(self, requests):
        out = []
        for request in requests:
            prompt = request.messages[-1].content
            tag = re.search(r"one line `(VERDICT \w+):", prompt)[1]
            reference = re.search(r"Reference answer:\n(.*?)\n\n", prompt, re.DOTALL)[1]
            shown = dict(re.findall(r"Response ?(\w*):\n(.*?)(?=\n\n)", prompt, re.DOTALL))
            out.append(Completion(f"{tag}: {self.verdict(reference, shown)}"))
        return out


def math_run(tmp_path, n: int = 3) -> str:
    result = Runner(RandomPolicy(), RunnerConfig(concurrency=4)).run(
        episodes_for_env("gfcr/Math-v0", n, kwargs=SPLIT)
    )
    path = tmp_path / "math.jsonl"
    write_jsonl(result.trajectories, path)
    return str(path)


def measured(path: str, judge) -> dict:
    found = diagnose(load_run([path], SPLIT), calibrate_tasks=3, judge=judge, judge_name="scripted")
    return found.criteria["judge_calibration"]


def test_a_judge_that_checks_the_reference_agrees_and_a_gullible_one_is_caught(tmp_path):
    path = math_run(tmp_path)
    honest = measured(path, LLMJudge(ScriptedJudge(lambda ref, shown: "1" if ref in shown[""] else "0")))
    assert honest["overall"] == {
        "episodes": 6, "scored": 6, "failures": 0, "failure_rate": 0.0, "agreement": 1.0,
        "false_pass_rate": 0.0, "false_fail_rate": 0.0,
    }  # fmt: skip
    assert list(honest["by_env"]) == ["gfcr/Math-v0"] and honest["judge"] == "scripted"
    gullible = measured(path, LLMJudge(ScriptedJudge(lambda ref, shown: "1")))["overall"]
    assert (gullible["agreement"], gullible["false_pass_rate"], gullible["false_fail_rate"]) == (
        0.5,
        1.0,
        0.0,
    )


def test_a_judge_that_cannot_judge_the_junk_counts_failures_and_a_pairwise_judge_ranks_gold_first(tmp_path):
    path = math_run(tmp_path)
    partial = LLMJudge(ScriptedJudge(lambda ref, shown: "1" if ref in shown[""] else "no idea"))
    found = measured(path, partial)["overall"]
    assert (found["scored"], found["failures"], found["failure_rate"]) == (3, 3, 0.5)
    assert (found["agreement"], found["false_pass_rate"]) == (1.0, None)  # no junk scored: no rate
    pairwise = GroupJudge(
        ScriptedJudge(lambda ref, shown: "A" if ref in shown["A"] else "B"), mode="pairwise"
    )
    ranked = measured(path, pairwise)["overall"]
    assert (ranked["agreement"], ranked["false_pass_rate"], ranked["failures"]) == (1.0, 0.0, 0)


def test_cli_the_tiny_model_as_judge_fails_every_verdict_and_is_counted_not_scored(tmp_path, tiny_model):
    path = math_run(tmp_path, n=2)
    base = ["diagnose", path, "--calibrate", "--calibrate-tasks", "2", "-e", "split=AIME2024",
            "--judge", f"hf:{tiny_model}", "--judge-max-tokens", "8"]  # fmt: skip
    result = CliRunner().invoke(app, [*base, "--json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)["criteria"]["judge_calibration"]
    assert found["overall"] == {
        "episodes": 4, "scored": 0, "failures": 4, "failure_rate": 1.0, "agreement": None,
        "false_pass_rate": None, "false_fail_rate": None,
    }  # fmt: skip
    table = CliRunner().invoke(app, [*base, "--judge-mode", "pairwise"])
    assert table.exit_code == 0, table.output
    assert "judge calibration" in table.output and ", pairwise (passes at 0.5)" in table.output
    refused = CliRunner().invoke(app, ["diagnose", path, "--judge", f"hf:{tiny_model}"])
    assert refused.exit_code != 0 and "add --calibrate" in refused.output
