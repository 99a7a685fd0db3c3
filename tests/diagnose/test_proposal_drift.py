"""`gfcr diagnose` on a training out_dir with `[propose]` (issue 36): the generated tasks' drift over
training, read from a real provenance store and metrics.jsonl, in the JSON, the terminal and the
HTML page, with each number and flag checked."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.proposals import ProvenanceRecord, ProvenanceStore

runner = CliRunner()

# (id, round, verdict, solver success, claimed agrees, rerun agrees)
PROPOSALS = [
    ("gen/0", 0, "valid", 0.5, True, True),
    ("gen/0x", 0, "invalid", None, None, None),
    ("gen/1", 1, "valid", 0.25, True, True),
    ("gen/1x", 1, "duplicate", None, None, None),
    ("gen/2a", 2, "trivial", 1.0, False, True),
    ("gen/2b", 2, "too_hard", 0.0, False, True),
    ("gen/3", 3, "valid", 0.8, False, False),
    ("gen/3x", 3, "trivial", 1.0, True, True),
]
POOL_SHARE = [0.2, 0.3333, 0.3333, 0.6]
TRAINED_SHARE = [0.5, 0.5, 0.25, 0.5]


@pytest.fixture
def run_dir(tmp_path):
    pytest.importorskip(
        "torch", reason="training out_dirs are read by the trainer: pip install -e '.[hf,train]'"
    )
    run = tmp_path / "train"
    store = ProvenanceStore(run / "proposals.db")
    for task_id, step, verdict, success, claimed, rerun in PROPOSALS:
        store.record(
            ProvenanceRecord(task_id, "gfcr/Math-v0", f"problem {task_id}", '"1"', str(step), ("mmath/0",),
                             verdict, "", step_proposed=step, solver_success=success, claimed_agrees=claimed,
                             rerun_agrees=rerun, step_added=step if verdict == "valid" else None)
        )  # fmt: skip
    store.retire("gen/0", step=2)
    store.close()
    metrics = [
        {"step": step + 1, "propose/step": step, "propose/pool_share": pool, "propose/trained_share": trained}
        for step, (pool, trained) in enumerate(zip(POOL_SHARE, TRAINED_SHARE, strict=True))
    ]
    (run / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))
    return run


def test_the_json_shows_each_windows_verdicts_shares_difficulty_agreement_and_the_drift_flags(run_dir):
    result = runner.invoke(app, ["diagnose", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    drift = json.loads(result.output)["criteria"]["proposals"]
    assert (drift["rounds"], drift["window"], drift["proposals"]) == (4, 1, 8)
    assert drift["verdicts"] == {
        "valid": 3, "invalid": 1, "duplicate": 1, "trivial": 2, "too_hard": 1, "guessable": 0
    }  # fmt: skip
    columns = ("rounds", "train_steps", "proposed", "valid", "trivial", "too_hard", "in_pool", "pool_share",
               "trained_share", "added_success", "claimed_agreement", "rerun_agreement")  # fmt: skip
    assert [tuple(row[c] for c in columns) for row in drift["rows"]] == [
        ("0", "1", 2, 1, 0, 0, 1, 0.2, 0.5, 0.5, 1.0, 1.0),
        ("1", "2", 2, 1, 0, 0, 2, 0.3333, 0.5, 0.25, 1.0, 1.0),
        ("2", "3", 2, 0, 1, 1, 1, 0.3333, 0.25, None, 0.0, 1.0),  # gen/0 retired at round 2
        ("3", "4", 2, 1, 1, 0, 2, 0.6, 0.5, 0.8, 0.5, 0.5),
    ]
    assert (drift["claimed_agreement"], drift["rerun_agreement"]) == (0.5, 0.8333)
    flags = drift["flags"]
    assert len(flags) == 4
    assert "60% of the family's pool" in flags[0] and "0.50 → 0.80" in flags[1]
    assert (
        "agree with its programs' 50%" in flags[2]
        and "1 proposals' checks" in flags[3]
        and "gen/3" in flags[3]
    )
    assert drift["summary"].startswith(
        "8 proposals over 4 rounds (3 valid, 1 invalid, 1 duplicate, 2 trivial"
    )


def test_the_terminal_and_the_html_page_show_the_table_the_summary_and_the_flags(run_dir, tmp_path):
    result = runner.invoke(app, ["diagnose", str(run_dir), "--html", str(tmp_path / "d")], terminal_width=250)
    assert result.exit_code == 0, result.output
    assert "generated tasks (proposals.db)" in result.output and "8 proposals over 4 rounds" in result.output
    assert "⚑ generated tasks are 60% of the family's pool" in result.output
    page = (tmp_path / "d" / "index.html").read_text()
    assert 'id="proposals"' in page and "re-executed checks 83%" in page and "0.50 → 0.80" in page
    assert json.loads((tmp_path / "d" / "diagnosis.json").read_text())["criteria"]["proposals"]["rounds"] == 4


def test_guessable_proposals_are_counted_in_the_table_and_flagged_when_they_dominate(tmp_path):
    pytest.importorskip(
        "torch", reason="training out_dirs are read by the trainer: pip install -e '.[hf,train]'"
    )
    store = ProvenanceStore(tmp_path / "proposals.db")
    for task_id, verdict, blind in [
        ("gen/0", "valid", 0.0),
        ("gen/1", "guessable", 0.5),
        ("gen/2", "guessable", 0.75),
    ]:
        store.record(
            ProvenanceRecord(task_id, "gfcr/Math-v0", f"problem {task_id}", '"yes"', "0", (), verdict, "", 0,
                             solver_success=0.5, blind_success=blind, step_added=0 if verdict == "valid" else None)
        )  # fmt: skip
    store.close()
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "propose/step": 0}) + "\n")
    result = runner.invoke(app, ["diagnose", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    drift = json.loads(result.output)["criteria"]["proposals"]
    assert drift["verdicts"]["guessable"] == 2 and [row["guessable"] for row in drift["rows"]] == [2]
    assert drift["summary"].startswith("3 proposals over 1 rounds (1 valid, 2 guessable)")
    assert any("2 of 3 verified proposals were guessable" in flag for flag in drift["flags"])
    shown = runner.invoke(app, ["diagnose", str(tmp_path)], terminal_width=250).output
    assert re.search(r"hard\s+gue", shown) and "were guessable" in shown  # the column, the flag


def test_a_run_without_proposals_has_no_drift_section(tmp_path):
    pytest.importorskip(
        "torch", reason="training out_dirs are read by the trainer: pip install -e '.[hf,train]'"
    )
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 1, "rollout/episodes": 4}) + "\n")
    result = runner.invoke(app, ["diagnose", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    assert "proposals" not in json.loads(result.output)["criteria"]
