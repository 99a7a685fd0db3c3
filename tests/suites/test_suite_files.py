"""Suites you define: TOML suite files, their errors, their fingerprint, and `gfcr.suites` plugins."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from gfcr.apps.cli import app
from gfcr.core import read_jsonl
from gfcr.errors import ConfigError, UnknownNameError
from gfcr.suites import Suite, SuiteEntry, load_suite

AIME = "gfcr/Math-v0"
SUITE_FILE = """
name = "aime-mini"
description = "Two AIME 2024 problems twice, two CHAMP problems once."
version = "3"

[[entries]]
env_id = "gfcr/Math-v0"
kwargs = { split = "AIME2024" }
tasks = ["mmath/AIME2024/0", "mmath/AIME2024/3"]
k = 2

[[entries]]
env_id = "gfcr/Math-v0"
kwargs = { dataset = "champ" }
num_tasks = 2
"""


@pytest.fixture
def suite_file(tmp_path):
    path = tmp_path / "aime-mini.toml"
    path.write_text(SUITE_FILE)
    return path


def test_a_suite_file_loads_with_its_entries_tasks_and_samples(suite_file):
    suite = load_suite(suite_file)
    assert (suite.name, suite.version, len(suite)) == ("aime-mini", "3", 4)
    first, second = suite.entries
    assert first.task_ids() == ["mmath/AIME2024/0", "mmath/AIME2024/3"] and first.sample_seeds(1) == [0, 1]
    assert len(second.task_ids()) == 2 and second.sample_seeds(k=3, seed=5) == [5, 6, 7]


def test_the_fingerprint_is_stable_across_processes_and_follows_the_work(suite_file):
    suite = load_suite(suite_file)
    script = f"import gfcr; from gfcr.suites import load_suite; print(load_suite({str(suite_file)!r}).fingerprint())"
    other_process = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert other_process.stdout.strip() == suite.fingerprint(), other_process.stderr
    assert len(suite.fingerprint()) == 64 and int(suite.fingerprint(), 16) >= 0
    # Name, description and version are labels, not work: the same entries give the same fingerprint.
    assert replace(suite, name="x", description="y", version="9").fingerprint() == suite.fingerprint()
    first, second = suite.entries
    changed = {
        "a task": replace(first, tasks=("mmath/AIME2024/0", "mmath/AIME2024/4")),
        "a keyword": replace(first, kwargs={"split": "AIME2024", "max_turns": 2}),
        "the samples": replace(first, k=3),
    }
    for what, entry in changed.items():
        assert Suite("s", "", (entry, second)).fingerprint() != suite.fingerprint(), what
    manifest = suite.manifest()[0]
    assert manifest["code"]["env"]["class"] == "gfcr.envs.math.env:MathEnv"
    assert manifest["code"]["verifier"]["class"] == "gfcr.envs.math.verifier:MathVerifier"
    assert [task_id for task_id, _ in manifest["tasks"]] == ["mmath/AIME2024/0", "mmath/AIME2024/3"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('name = "x"\n[[entries]]\nenv_id = "gfcr/Math-v0"\nnum_task = 3\n',
         "[entries #1]: unknown key 'num_task'; did you mean 'num_tasks'?"),
        ('nmae = "x"\n[[entries]]\nenv_id = "gfcr/Math-v0"\n', "unknown key 'nmae'; did you mean 'name'?"),
        ('[[entries]]\nenv_id = "gfcr/Mth-v0"\n', "unknown env id 'gfcr/Mth-v0'; did you mean 'gfcr/Math-v0'?"),
        ('[[entries]]\nkwargs = {}\n', "[entries #1]: missing key 'env_id'"),
        ('name = "x"\n', "a suite needs one [[entries]] table per env"),
        ('[[entries]]\nenv_id = "gfcr/Math-v0"\nnum_tasks = 2\ntasks = ["a"]\n', "not both"),
        ('[[entries]]\nenv_id = "gfcr/Math-v0"\nk = 0\n', "k of gfcr/Math-v0 must be an integer >= 1, got 0"),
        ('[[entries]]\nenv_id = "gfcr/Math-v0"\nseeds = "1"\n', "seeds of gfcr/Math-v0 must be a non-empty list"),
        ("[[entries]\n", "is not valid TOML"),
    ],
)  # fmt: skip
def test_bad_suite_files_say_what_is_wrong_and_where(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as error:
        load_suite(path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_an_unknown_task_id_is_named_with_the_nearest_one():
    entry = SuiteEntry(AIME, {"split": "AIME2024"}, tasks=("mmath/AIME2024/00",))
    with pytest.raises(UnknownNameError, match=r"unknown task id 'mmath/AIME2024/00'; did you mean"):
        entry.task_ids()


def test_a_missing_suite_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_suite(tmp_path / "nope.toml")


def test_a_plugin_suite_is_found_through_its_entry_point(tmp_path, suite_file, installed_distribution):
    """A real installed distribution with a `gfcr.suites` entry point (a factory loading a TOML file)."""
    installed_distribution(
        "acme-suites",
        "[gfcr.suites]\nacme-aime = acme_suites:aime\nacme-broken = no_such_module:suite\n",
        {
            "acme_suites/__init__.py": "from gfcr.suites import load_suite\n\n"
            f"def aime():\n    return load_suite({str(suite_file)!r})\n"
        },
    )
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(tmp_path)!r})
        import gfcr
        assert "acme-aime" in gfcr.list_suites() and "acme-broken" not in gfcr.list_suites()
        suite = gfcr.make_suite("acme-aime")
        print(suite.name, len(suite), suite.fingerprint())
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["aime-mini", "4", load_suite(suite_file).fingerprint()]
    assert "skipping suite acme-broken" in result.stderr


def test_an_env_plugin_carries_registration_keywords(tmp_path, installed_distribution):
    """`gfcr.env_registrations`: defaults and max_episode_steps from an installed plugin's mapping."""
    installed_distribution(
        "acme-regs",
        "[gfcr.env_registrations]\nacme/Aime-v0 = acme_regs:AIME\nacme/Typo-v0 = acme_regs:TYPO\n",
        {
            "acme_regs/__init__.py": 'AIME = {"entry_point": "gfcr.envs.math.env:MathEnv", "kwargs": {"split": "AIME2024"},\n'
            '        "max_episode_steps": 1}\n'
            'TYPO = {"entry_point": "gfcr.envs.math.env:MathEnv", "max_episode_step": 1}\n'
        },
    )
    script = textwrap.dedent(f"""
        import sys; sys.path.insert(0, {str(tmp_path)!r})
        import gymnasium as gym, gfcr
        assert "acme/Typo-v0" not in gfcr.list_envs()
        spec = gym.spec("acme/Aime-v0")
        env = gym.make("acme/Aime-v0")
        entry = gfcr.SuiteEntry("acme/Aime-v0", num_tasks=2)
        print(spec.max_episode_steps, len(env.unwrapped.tasks), entry.manifest()["kwargs"])
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1 30 {'split': 'AIME2024'}"
    assert "unknown key 'max_episode_step'; did you mean 'max_episode_steps'?" in result.stderr


def test_gfcr_bench_runs_a_suite_file_and_records_its_version_and_fingerprint(tmp_path, suite_file):
    report = tmp_path / "report"
    args = [
        "bench",
        str(suite_file),
        "-a",
        "scripted:oracle",
        "-a",
        "scripted:random",
        "--report",
        str(report),
    ]
    result = CliRunner().invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    fingerprint = load_suite(suite_file).fingerprint()
    assert f"suite aime-mini v3 · fingerprint {fingerprint}" in result.output and "pass@2" in result.output
    results = json.loads((report / "results.json").read_text())
    assert (results["suite"], results["suite_version"], results["suite_fingerprint"], results["k"]) == (
        "aime-mini", "3", fingerprint, 2
    )  # fmt: skip
    oracle, junk = (
        results["agents"]["scripted:oracle"]["overall"],
        results["agents"]["scripted:random"]["overall"],
    )
    assert oracle["episodes"] == 2 * 2 + 2 and oracle["pass_at"]["1"] == 1.0 and junk["pass_at"]["1"] == 0.0
    seeds = sorted(t.provenance.seed for t in read_jsonl(report / "trajectories" / "scripted_oracle.jsonl"))
    assert seeds == [0, 0, 0, 0, 1, 1]  # AIME: k = 2 (seeds 0, 1) for 2 tasks; CHAMP: 1 sample of 2 tasks
    assert fingerprint in (report / "index.html").read_text()


def test_gfcr_bench_of_a_missing_suite_file_says_so(tmp_path):
    result = CliRunner().invoke(app, ["bench", str(tmp_path / "mine.toml"), "-a", "scripted:oracle"])
    assert result.exit_code == 2 and "does not exist" in result.output


def test_the_built_in_suites_are_the_envs_layers_entry_points():
    from importlib.metadata import entry_points

    declared = {ep.name: ep.value for ep in entry_points(group="gfcr.suites") if ep.value.startswith("gfcr.")}
    assert declared["smoke"] == "gfcr.envs.suites:smoke"
    assert set(declared) >= {"smoke", "math", "code", "sql", "dialogue", "browser", "swe"}


def test_with_no_named_suite_installed_the_error_says_to_reinstall(monkeypatch):
    from gfcr import suites

    monkeypatch.setattr(suites, "_SUITES", {})
    monkeypatch.setattr(suites, "_plugins_loaded", True)  # as if the metadata had no entry points
    with pytest.raises(UnknownNameError, match="no named suite is installed .*reinstall gfcr"):
        suites.make_suite("smoke")
