"""`gfcr compare` on real bench outputs: paired significance, per-env rows, leaderboard, HTML view."""

from __future__ import annotations

import json
import shutil
from math import comb

import pytest
from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.apps.compare import bootstrap_ci, compare_runs, load_runs, mcnemar_exact

cli = CliRunner()


def invoke(*args: str):
    result = cli.invoke(app, list(args), terminal_width=200)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Two bench reports of the math suite (4 tasks per entry, k = 2): oracle + random, then oracle again."""
    root = tmp_path_factory.mktemp("reports")
    common = ["math", "--num-tasks", "4", "-k", "2"]
    invoke("bench", *common, "-a", "scripted:oracle", "-a", "scripted:random", "--report", str(root / "both"))
    invoke("bench", *common, "-a", "scripted:oracle", "--report", str(root / "again"))
    return root


def test_mcnemar_matches_the_exact_binomial_by_hand():
    # b = 2, c = 8: P(X <= 2) for X ~ Bin(10, 1/2) is (1 + 10 + 45) / 1024; two-sided doubles it.
    assert mcnemar_exact(2, 8) == pytest.approx(2 * (1 + 10 + 45) / 1024) == pytest.approx(0.109375)
    assert mcnemar_exact(8, 2) == mcnemar_exact(2, 8)
    assert mcnemar_exact(0, 12) == pytest.approx(2 / 2**12)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(4, 30) == pytest.approx(2 * sum(comb(34, i) for i in range(5)) / 2**34)


def test_the_bootstrap_interval_is_fixed_by_its_seed_and_covers_the_mean():
    differences = [1.0, 0.0, 0.0, -0.5, 1.0, 0.5, 0.0, 1.0]
    low, high = bootstrap_ci(differences)
    assert (low, high) == bootstrap_ci(differences) and low < sum(differences) / 8 < high


def test_oracle_against_random_is_significant_per_task_and_per_env(reports):
    result = invoke("compare", str(reports / "both"))
    assert "scripted:random vs scripted:oracle" in result.output and "significant" in result.output
    (comparison,) = compare_runs(load_runs([reports / "both"]))["comparisons"]
    assert (comparison.a, comparison.b) == ("scripted:oracle", "scripted:random")
    assert comparison.paired_tasks == 12 and comparison.paired_episodes == 24
    assert comparison.pass_at_1_a == 1.0 and comparison.pass_at_1_b == 0.0
    assert comparison.difference == -1.0 and comparison.ci95 == (-1.0, -1.0)
    assert (comparison.b_only_a, comparison.c_only_b) == (24, 0)
    assert comparison.p_value == pytest.approx(2 / 2**24) and comparison.significant
    assert len(comparison.by_env) == 3 and all(e["tasks"] == 4 for e in comparison.by_env.values())
    assert 'gfcr/Math-v0 dataset="champ"' in comparison.by_env and len(comparison.tasks) == 12


def test_identical_runs_are_not_significant_and_the_interval_contains_zero(reports):
    result = json.loads(invoke("compare", str(reports / "both"), str(reports / "again"), "--json").stdout)
    names = [row["run"] for row in result["leaderboard"]]
    assert sorted(names) == ["again:scripted:oracle", "both:scripted:oracle", "scripted:random"]
    assert names[-1] == "scripted:random" and result["same_suite"] is True
    by_b = {c["b"]: c for c in result["comparisons"]}
    same = by_b["again:scripted:oracle"]
    assert same["difference"] == 0.0 and same["ci95"][0] <= 0.0 <= same["ci95"][1]
    assert same["p_value"] == 1.0 and same["significant"] is False and same["tasks"] == []


def test_runs_written_by_gfcr_run_compare_as_jsonl_and_unpaired_episodes_are_counted(tmp_path):
    for agent, episodes in (("random", "10"), ("oracle", "8")):  # the oracle's 8 are the random run's first 8
        invoke("run", "gfcr/Math-v0", "-a", f"scripted:{agent}", "-n", episodes, "-e", "split=AIME2024",
               "--out", str(tmp_path / f"{agent}.jsonl"))  # fmt: skip
    result = json.loads(invoke("compare", str(tmp_path / "random.jsonl"), str(tmp_path / "oracle.jsonl"),
                               "--json").stdout)  # fmt: skip
    (comparison,) = result["comparisons"]
    assert comparison["a"] == "scripted:random" and comparison["difference"] == 1.0
    assert comparison["paired_episodes"] == 8 and comparison["unpaired"] == [2, 0]
    assert comparison["by_env"]["gfcr/Math-v0"]["c_only_b"] == 8 and comparison["significant"]
    assert comparison["p_value"] == pytest.approx(2 / 2**8)


def test_the_html_view_shows_paired_trajectories_side_by_side(reports, tmp_path):
    invoke("compare", str(reports / "both"), "--html", str(tmp_path / "view"))
    index = (tmp_path / "view" / "index.html").read_text()
    assert "Leaderboard" in index and "McNemar p" in index and 'href="pairs/1.html"' in index
    pair = (tmp_path / "view" / "pairs" / "1.html").read_text()
    assert pair.count('class="pair"') == 2  # k = 2: two samples, each a pair of columns
    assert 'scripted:oracle: <span class="solved">solved' in pair and "scripted:random: <span" in pair
    assert json.loads((tmp_path / "view" / "compare.json").read_text())["baseline"] == "scripted:oracle"


def test_runs_without_common_episodes_or_inputs_that_are_not_runs_get_clear_errors(reports, tmp_path):
    invoke("run", "gfcr/Math-v0", "-a", "scripted:oracle", "-n", "2", "-e", "split=AIME2025",
           "--out", str(tmp_path / "other.jsonl"))  # fmt: skip
    result = cli.invoke(app, ["compare", str(reports / "both"), str(tmp_path / "other.jsonl")])
    assert result.exit_code == 2 and "no episode in common" in result.output
    result = cli.invoke(app, ["compare", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "does not exist" in result.output
    result = cli.invoke(app, ["compare", str(tmp_path)])
    assert result.exit_code == 2 and "not a bench report" in result.output


def test_two_reports_of_the_same_agents_compare_agent_with_agent_and_are_named_by_their_folders(reports, tmp_path):
    # The same model under two settings: report folders whose names differ only after a dot (which
    # Path.stem would drop) or only in a parent folder.
    for name in ("t0.7", "t0.9"):
        shutil.copytree(reports / "both", tmp_path / "runs" / name)
    for name in ("a/report", "b/report"):
        shutil.copytree(reports / "both", tmp_path / name)
    result = json.loads(invoke("compare", str(tmp_path / "runs/t0.7"), str(tmp_path / "runs/t0.9"), "--json").stdout)
    pairs = [(c["a"], c["b"]) for c in result["comparisons"]]
    assert pairs == [(f"t0.7:scripted:{x}", f"t0.9:scripted:{x}") for x in ("oracle", "random")]
    assert result["by_agent"] is True and result["baseline"] == "t0.7"
    assert all(c["paired_episodes"] == 24 and c["difference"] == 0.0 for c in result["comparisons"])
    picked = json.loads(invoke("compare", str(tmp_path / "a/report"), str(tmp_path / "b/report"),
                               "--agent", "scripted:random", "--json").stdout)  # fmt: skip
    assert [(c["a"], c["b"]) for c in picked["comparisons"]] == [("a/report:scripted:random", "b/report:scripted:random")]
    assert [row["run"] for row in picked["leaderboard"]] == ["a/report:scripted:random", "b/report:scripted:random"]
    result = cli.invoke(app, ["compare", str(tmp_path / "a/report"), "--agent", "hf:nope"])
    assert result.exit_code == 2 and "no input holds agent hf:nope" in result.output
    result = cli.invoke(app, ["compare", str(tmp_path / "a/report"), str(tmp_path / "a/../a/report")])
    assert result.exit_code == 2 and "given more than once" in result.output
