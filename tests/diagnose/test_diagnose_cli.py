"""`gfcr diagnose` as a user runs it, on real `gfcr run` and `gfcr bench` output; the bench
report's criteria section; whether two reports are comparable."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.apps.diagnose import PATHOLOGIES, comparable

runner = CliRunner()


@pytest.fixture(scope="module")
def oracle_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "oracle.jsonl"
    args = ["run", "gfcr/Math-v0", "-a", "scripted:oracle", "-n", "6", "-o", str(out), "-e", "split=AIME2024"]
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    return out


def bench(report, *extra: str):
    args = ["bench", "gfcr/Math-v0", "-a", "scripted:oracle", "-a", "scripted:random", "-k", "2",
            "--num-tasks", "3", "-e", "split=AIME2024", "--report", str(report), *extra]  # fmt: skip
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output


def test_json_has_exactly_the_pathologies_and_the_criteria(oracle_run):
    result = runner.invoke(app, ["diagnose", str(oracle_run), "--json", "--reverify", "-e", "split=AIME2024"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert set(report) == {"pathologies", "criteria"}
    assert [p["name"] for p in report["pathologies"]] == list(PATHOLOGIES)
    assert all(set(p) == {"name", "severity", "evidence", "levers"} for p in report["pathologies"])
    assert report["criteria"]["reliability"]["verifier_agreement"] == 1.0
    assert report["criteria"]["card"]["work"]["envs"] == {"gfcr/Math-v0": [{"split": "AIME2024"}]}


def test_terminal_summary_and_html_page(oracle_run, tmp_path):
    result = runner.invoke(
        app, ["diagnose", str(oracle_run), "--html", str(tmp_path / "d")], terminal_width=200
    )
    assert result.exit_code == 0, result.output
    assert all(name in result.output for name in PATHOLOGIES)
    assert "not measurable from this input" in result.output and "card: gfcr" in result.output
    page = (tmp_path / "d" / "index.html").read_text()
    assert all(f'id="{name}"' in page for name in PATHOLOGIES) and "reproducibility card" in page
    assert json.loads((tmp_path / "d" / "diagnosis.json").read_text())["pathologies"]


def test_fail_on_exits_1_when_a_pathology_is_that_severe(tmp_path):
    report = tmp_path / "report"
    bench(report)  # the oracle always passes, random always fails: every group is flat
    flat = runner.invoke(app, ["diagnose", str(report), "--fail-on", "high"], terminal_width=200)
    assert flat.exit_code == 1, flat.output
    assert "dynamic_sampling = true` (DAPO)" in flat.output
    bad = runner.invoke(app, ["diagnose", str(report), "--fail-on", "severe"])
    assert bad.exit_code == 2 and "--fail-on must be low, medium or high" in bad.output


def test_bench_report_has_a_criteria_section_and_comparable_cards(tmp_path):
    bench(tmp_path / "a")
    results = json.loads((tmp_path / "a" / "results.json").read_text())
    criteria = results["criteria"]
    oracle = criteria["agents"]["scripted:oracle"]
    assert oracle["reliability"]["verifier_agreement"] == 1.0 and oracle["reliability"]["flake_rate"] == 0.0
    assert oracle["coverage"]["pass_at_1"] == 1.0 and oracle["cost"]["solved_tasks"] == 3
    assert criteria["agents"]["scripted:random"]["cost"]["per_solved_task"] is None  # nothing solved
    assert criteria["card"]["suite_fingerprint"] == results["suite_fingerprint"]
    page = (tmp_path / "a" / "index.html").read_text()
    assert "Criteria · scripted:oracle" in page and "verifier_agreement" in page and 'id="card"' in page

    bench(tmp_path / "b")
    again = json.loads((tmp_path / "b" / "results.json").read_text())["criteria"]["card"]
    assert comparable(criteria["card"], again) == (True, [])
    bench(tmp_path / "c", "--num-tasks", "2")
    fewer = json.loads((tmp_path / "c" / "results.json").read_text())["criteria"]["card"]
    ok, reasons = comparable(criteria["card"], fewer)
    assert not ok and any(r.startswith("different work") for r in reasons)
    assert any(r.startswith("different suites") for r in reasons)


def test_diagnose_reads_a_bench_report_with_its_env_keywords(tmp_path):
    bench(tmp_path / "r")
    result = runner.invoke(app, ["diagnose", str(tmp_path / "r"), "--json", "--reverify"])
    report = json.loads(result.output)
    assert report["criteria"]["reliability"]["rejudged"] == 12  # 2 agents x 3 tasks x 2 samples
    assert report["criteria"]["card"]["models"].keys() == {"scripted:oracle", "scripted:random"}
    by_run = report["criteria"]["by_run"]  # pooled scores mix the agents: each one alone too
    assert by_run["scripted:oracle"]["coverage"]["pass_at_1"] == 1.0
    assert by_run["scripted:random"]["coverage"]["pass_at_1"] == 0.0
    assert by_run["scripted:random"]["reliability"]["rejudged"] == 6


def test_each_episode_is_rejudged_under_the_configuration_it_ran_with(tmp_path):
    # One task under two configurations that judge differently: multi-turn SQL wants a submit_sql
    # call, single-turn a SQL block. Judging either with the other's verifier would reject the oracle.
    suite = tmp_path / "sql.toml"
    suite.write_text(
        'name = "sql-modes"\n'
        '[[entries]]\nenv_id = "gfcr/SQL-v0"\nkwargs = { dataset = "chinook" }\ntasks = ["chinook/001"]\n'
        '[[entries]]\nenv_id = "gfcr/SQL-v0"\nkwargs = { dataset = "chinook", mode = "single_turn" }\n'
        'tasks = ["chinook/001"]\n'
    )
    report = tmp_path / "r"
    done = runner.invoke(app, ["bench", str(suite), "-a", "scripted:oracle", "--report", str(report)])
    assert done.exit_code == 0, done.output
    reliability = json.loads((report / "results.json").read_text())["criteria"]["agents"]["scripted:oracle"][
        "reliability"
    ]
    assert (reliability["rejudged"], reliability["verifier_agreement"]) == (2, 1.0)
    rejudged = json.loads(runner.invoke(app, ["diagnose", str(report), "--json", "--reverify"]).output)
    assert rejudged["criteria"]["reliability"]["verifier_agreement"] == 1.0


def test_a_bench_report_is_diagnosed_agent_by_agent_with_evaluation_levers(tmp_path):
    bench(tmp_path / "r")  # the oracle passes every sample, the random agent fails every one
    result = runner.invoke(app, ["diagnose", str(tmp_path / "r"), "--json", "--html", str(tmp_path / "d")])
    report = json.loads(result.output)
    runs = report["runs"]
    assert runs.keys() == {"scripted:oracle", "scripted:random"}
    flat = {run: next(p for p in found if p["name"] == "zero_variance_groups") for run, found in runs.items()}
    oracle, random = flat["scripted:oracle"]["evidence"], flat["scripted:random"]["evidence"]
    assert (oracle["groups"], oracle["all_pass"], oracle["all_fail"]) == (3, 3, 0)  # its own groups only
    assert (random["groups"], random["all_pass"], random["all_fail"]) == (3, 0, 3)
    worst = next(p for p in report["pathologies"] if p["name"] == "zero_variance_groups")
    assert worst["evidence"] == {"by_run": {"scripted:oracle": "high", "scripted:random": "high"}}
    assert any("harder tasks" in lever for lever in flat["scripted:oracle"]["levers"])
    assert any("never solved" in lever for lever in flat["scripted:random"]["levers"])
    levers = [lever for found in runs.values() for p in found for lever in p["levers"]]
    # an evaluation's levers: a trainer setting only as what `gfcr train` would need, never as the fix
    trainer = [lever for lever in levers if "`[" in lever]
    assert trainer and all(0 <= lever.find("`gfcr train`") < lever.index("`[") for lever in trainer)
    page = (tmp_path / "d" / "index.html").read_text()
    assert 'id="scripted:oracle-zero_variance_groups"' in page and "Pathologies · scripted:random" in page


def test_one_sample_per_task_reads_as_a_sentence(tmp_path):
    bench(tmp_path / "r", "-k", "1")
    result = runner.invoke(app, ["diagnose", str(tmp_path / "r")], terminal_width=200)
    assert "tokens on zero-variance groups not measurable (no prompt has two samples)" in result.output
    assert "not measurable of" not in result.output
