"""`gfcr bench`: scores, the terminal table, the report directory, and its HTML read in headless Chromium."""

from __future__ import annotations

import io
import json
import random
import re
import time
from itertools import combinations
from pathlib import Path

import pytest
from runner_envs import ScriptPolicy
from typer.testing import CliRunner

from gfcr.agents import OraclePolicy, Runner, RunnerConfig, episodes_for_env
from gfcr.agents.runner.specs import EpisodeSpec, env_config
from gfcr.apps.bench import svg
from gfcr.apps.bench.bench import AgentResult, BenchConfig, BenchResult, config_label
from gfcr.apps.bench.metrics import pass_at_k, pass_hat_k, score
from gfcr.apps.bench.report import write_report
from gfcr.apps.cli import app
from gfcr.core import read_jsonl

cli = CliRunner()
CHROMIUM_ARGS = [
    *("--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"),
    *("--disable-sync", "--no-first-run", "--disable-dev-shm-usage"),
]


def test_pass_at_k_and_pass_hat_k_match_counting_every_subset_of_k_samples():
    rng = random.Random(0)
    for _ in range(50):
        n = rng.randint(1, 8)
        outcomes = [rng.random() < 0.4 for _ in range(n)]
        for k in range(1, n + 1):
            subsets = list(combinations(outcomes, k))
            assert pass_at_k(n, sum(outcomes), k) == pytest.approx(
                sum(any(s) for s in subsets) / len(subsets)
            )
            assert pass_hat_k(n, sum(outcomes), k) == pytest.approx(
                sum(all(s) for s in subsets) / len(subsets)
            )


def test_bench_runs_agents_on_a_suite_prints_scores_and_writes_a_report(tmp_path):
    report = tmp_path / "report"
    args = ["bench", "math", "--agent", "scripted:oracle", "--agent", "scripted:random", "-k", "2",
            "--num-tasks", "3", "--report", str(report)]  # fmt: skip
    result = cli.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert (
        "scripted:oracle" in result.output
        and "pass^2" in result.output
        and f"report: {report}" in result.output
    )
    shown = " ".join(result.output.split())  # the caption under the table wraps at its width
    assert "scripted:oracle — gold answers from each task's data: the verifiers' upper bound" in shown
    assert "scripted:random — junk text and broken tool calls" in shown
    results = json.loads((report / "results.json").read_text())
    oracle, junk = results["agents"]["scripted:oracle"], results["agents"]["scripted:random"]
    assert oracle["overall"]["pass_at"]["1"] == 1.0 and oracle["overall"]["pass_hat"]["2"] == 1.0
    assert all(entry["pass_at"]["1"] == 1.0 for entry in oracle["entries"].values())
    assert junk["overall"]["pass_at"]["2"] < 0.2 and junk["overall"]["outcomes"].get("solved", 0) < 5
    episodes = oracle["overall"]["episodes"]
    assert episodes == 2 * 9 and oracle["overall"]["tasks"] == 9 and len(oracle["entries"]) == 3
    assert len(list(read_jsonl(report / "trajectories" / "scripted_oracle.jsonl"))) == episodes
    assert (report / "index.html").exists() and (report / "episodes" / "scripted_random" / "1.html").exists()

    again = cli.invoke(app, [*args, "--resume"], terminal_width=200)  # nothing left to run
    assert again.exit_code == 0, again.output
    assert (
        json.loads((report / "results.json").read_text())["agents"]["scripted:oracle"]["overall"]
        == oracle["overall"]
    )


def test_bench_of_the_tiny_model_reports_its_tokens_and_keeps_token_data(tiny_model, tmp_path):
    args = ["bench", "gfcr/Math-v0", "-a", f"hf:{tiny_model}", "--num-tasks", "3", "--max-tokens", "12",
            "-e", "split=AIME2024", "--report", str(tmp_path)]  # fmt: skip
    result = cli.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    (trajectories,) = (tmp_path / "trajectories").iterdir()
    for t in read_jsonl(trajectories):
        assert t.cost.tokens_out == len(t.tokens.completion_ids) <= 12 and t.tokens.prompt_ids
    scores = json.loads((tmp_path / "results.json").read_text())["agents"][f"hf:{tiny_model}"]["overall"]
    assert 0 < scores["mean_tokens_out"] <= 12 and scores["episodes"] == 3
    # the caption says what the model is: not a pretrained one, its size, dtype and device
    shown = " ".join(result.output.split())
    assert re.search(rf"hf:{tiny_model} — qwen2, 0\.\dM parameters, float32 on (cpu|cuda|mps)", shown), shown


def test_bad_bench_input_gets_a_clear_error():
    result = cli.invoke(app, ["bench", "smok", "--agent", "scripted:oracle"], terminal_width=200)
    assert result.exit_code == 2 and "did you mean 'smoke'" in result.output
    result = cli.invoke(app, ["bench", "smoke", "--agent", "hf:"], terminal_width=200)
    assert result.exit_code == 2 and "hf: specs name a model directory" in result.output


@pytest.fixture
def hostile_report(tmp_path) -> Path:
    """A report of episodes whose model output is markup: it must be shown, never run."""
    call = '<tool_call>{"name": "echo", "arguments": {"text": "<img src=x onerror=alert(1)>"}}</tool_call>'
    policy = ScriptPolicy(text=f"<script>window.pwned = 1</script><b>bold?</b> {call}")
    config = env_config("test/Echo-v0")
    specs = [EpisodeSpec(config, f"turns-{n}", sample=j, seed=j) for n in (1, 2) for j in range(2)]
    run = Runner(policy).run(specs)
    label = config_label(config)
    scores = {
        label: score({t: [x for x in run.trajectories if x.task_id == t] for t in ("turns-1", "turns-2")}, 2)
    }
    agent = AgentResult(
        "script", scores[label], scores, run.trajectories, tmp_path / "trajectories/script.jsonl", 1.0
    )
    bench_config = BenchConfig(("test/Echo-v0",), ("script",), k=2, report=tmp_path)
    return write_report(bench_config, BenchResult("echo", [agent], {s.id: label for s in specs}))


@pytest.mark.timeout(120)
def test_the_report_reads_in_headless_chromium_and_shows_model_output_as_text(hostile_report):
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(hostile_report.as_uri())
        assert page.title() == "gfcr bench · echo"
        row = page.locator("#summary tr").nth(1).inner_text()
        assert row.startswith("script\t4\t1.000\t1.000\t1.000")  # agent, episodes, pass@1, pass@2, pass^2
        assert page.locator("svg rect.bar").count() >= 2 and page.locator("svg polyline.line").count() == 2
        page.get_by_role("link", name="read episodes").click()
        assert page.locator("#episodes tr").count() == 5  # header + 4 episodes
        page.locator("#episodes a", has_text="3").click()
        assert page.locator("section.turn").count() == 2  # turns-2: two turns
        turn = page.locator("#turn-1").inner_text()
        assert "<script>window.pwned = 1</script><b>bold?</b>" in turn  # shown as text
        assert "tool call echo" in turn and '"<img src=x onerror=alert(1)>"' in turn
        assert "tool · echo" in turn and "reward 0.000" in turn
        assert page.evaluate("typeof window.pwned") == "undefined" and page.locator("b").count() == 0
        page.get_by_role("link", name="next →").click()
        assert page.url.endswith("/4.html") and "reward 1.000" in page.locator("#turn-2").inner_text()
        assert errors == []
        browser.close()


class SlowOracle(OraclePolicy):
    """The oracle at 0.3 s a batch, whatever the batch's size (as a GPU model batches)."""

    def generate(self, requests):
        time.sleep(0.3)
        return super().generate(requests)


def test_each_episode_is_charged_its_share_of_a_batch_not_the_whole_batch(tmp_path):
    # 16 one-turn episodes in batches of up to 16: charged the whole batch each, they would sum to
    # at least 16 x 0.3 s = 4.8 s, several times the run's wall time
    specs = episodes_for_env("gfcr/Math-v0", 16, kwargs={"split": "AIME2024"})
    started = time.perf_counter()
    Runner(SlowOracle(), RunnerConfig(concurrency=16)).run(specs, tmp_path / "run.jsonl")
    wall = time.perf_counter() - started
    trajectories = list(read_jsonl(tmp_path / "run.jsonl"))
    policy_s = score({t.id: [t] for t in trajectories}).policy_s  # the bench's total
    assert len(trajectories) == 16 and policy_s <= wall
    assert policy_s >= 0.3  # every batch's seconds are charged to its episodes


@pytest.fixture(scope="module")
def scripted_report(tmp_path_factory) -> Path:
    """A real bench of the oracle and the random agent on a small suite (2 AIME 2024 problems, one
    SQL task with tools), 2 samples each, diagnosed."""
    root = tmp_path_factory.mktemp("scripted")
    suite = root / "small.toml"
    suite.write_text(
        'name = "small"\n'
        '[[entries]]\nenv_id = "gfcr/Math-v0"\nkwargs = { split = "AIME2024" }\nnum_tasks = 2\n'
        '[[entries]]\nenv_id = "gfcr/SQL-v0"\nkwargs = { dataset = "chinook" }\ntasks = ["chinook/001"]\n'
    )
    args = ["bench", str(suite), "-a", "scripted:oracle", "-a", "scripted:random", "-k", "2",
            "--report", str(root / "report")]  # fmt: skip
    assert (done := cli.invoke(app, args, terminal_width=200)).exit_code == 0, done.output
    diagnosed = cli.invoke(app, ["diagnose", str(root / "report"), "--html", str(root / "diagnosis")])
    assert diagnosed.exit_code == 0, diagnosed.output
    return root


def colour_share(png: bytes, hex_colour: str) -> float:
    """The share of a screenshot's pixels within a few levels of `hex_colour`."""
    image = pytest.importorskip("PIL.Image").open(io.BytesIO(png)).convert("RGB")
    want = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    pixels = list(image.getdata())
    return sum(all(abs(a - b) <= 12 for a, b in zip(p, want, strict=True)) for p in pixels) / len(pixels)


@pytest.mark.timeout(120)
def test_the_report_and_its_diagnosis_read_as_a_person_sees_them(scripted_report):
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    shots = scripted_report / "screenshots"
    shots.mkdir()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto((scripted_report / "report" / "index.html").as_uri())
        page.screenshot(path=shots / "index.png", full_page=True)
        # the random agent's pass@1 of 0 is a bar of height 0: its label says so
        pass_at_1 = page.locator("figure").nth(0)
        assert pass_at_1.locator("text.value").all_text_contents() == ["1.00", "0.00"] * 2
        assert pass_at_1.locator("text.value").nth(1).is_visible()
        # the oracle's pass^k (1.0) lies on its pass@k (1.0): both colours show on screen
        curves = page.locator("figure").nth(1)
        png = curves.screenshot(path=shots / "pass_at_k.png")
        assert colour_share(png, svg.PALETTE[0]) > 0.002 and colour_share(png, svg.PALETTE[2]) > 0.002
        cells = page.locator("section.criteria td.text").all_inner_texts()
        assert cells and not [c for c in cells if c.lstrip().startswith(("{", "["))]  # no raw JSON
        assert page.locator("section.criteria table.nested").count() > 0

        page.goto((scripted_report / "diagnosis" / "index.html").as_uri())
        page.screenshot(path=shots / "diagnosis.png", full_page=True)
        cells = page.locator("table.evidence > tbody > tr > td.text").all_inner_texts()
        assert cells and not [c for c in cells if c.lstrip().startswith(("{", "["))]
        example = page.locator("#scripted\\:random-zero_variance_groups a[href*='episodes/scripted_random']").first
        trajectory_id = example.inner_text()
        example.click()
        assert page.url.endswith(f"episodes/scripted_random/index.html#{trajectory_id}")
        assert page.locator(f"#episodes tr[id='{trajectory_id}']").is_visible()
        page.screenshot(path=shots / "episodes.png")
        # an SQL episode's page shows the tools the model was offered
        page.locator("#episodes tr", has_text="gfcr/SQL-v0").first.locator("a").click()
        tools = page.locator("details.tool.spec")
        assert [s.split(" —")[0] for s in tools.locator("summary").all_inner_texts()] == ["execute_sql", "submit_sql"]
        assert tools.first.locator("pre").is_visible() and '"query"' in tools.first.inner_text()
        page.screenshot(path=shots / "episode.png", full_page=True)
        browser.close()
