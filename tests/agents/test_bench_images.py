"""Images in stored runs and their views: `gfcr run --out` (and its resume), bench's trajectories
and report viewer, and `gfcr compare`'s side-by-side pages show each message's images."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from image_envs import ENV_ID, square
from typer.testing import CliRunner

from gfcr.agents import make_policy
from gfcr.agents.runner import Runner
from gfcr.agents.runner.specs import EpisodeSpec, env_config
from gfcr.agents.runner.writer import TrajectoryWriter
from gfcr.apps.bench.bench import BenchConfig, bench
from gfcr.apps.bench.compare_view import write_compare_view
from gfcr.apps.bench.report import write_report
from gfcr.apps.cli import app
from gfcr.apps.compare import compare_runs, load_runs
from gfcr.core import read_jsonl

IMG = re.compile(r'<img class="shown" src="([^"]+)" alt="image ([0-9a-f]{12})">')


def shown_images(page: Path) -> list[tuple[Path, str]]:
    """Each `<img>` of a page: the file it refers to (resolved from the page) and its hash prefix."""
    return [((page.parent / source).resolve(), sha) for source, sha in IMG.findall(page.read_text())]


def test_gfcr_run_out_stores_images_beside_the_jsonl_and_a_resume_keeps_them(tmp_path):
    out = tmp_path / "run.jsonl"
    result = CliRunner().invoke(
        app, ["run", ENV_ID, "--agent", "scripted:random", "-n", "3", "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    trajectories = list(read_jsonl(out))
    stored = sorted(p.name for p in (tmp_path / "images").iterdir())
    assert stored == sorted({f"{image.sha256}.png" for t in trajectories for image in t.images})
    assert all(t.images[0] == square(t.task_id[7:]) for t in trajectories)
    assert "base64" not in out.read_text()  # lines refer to images by hash
    # A resume that rewrites the file (its failed episode is run again) keeps every image readable.
    failed = trajectories[0]
    failed.status, failed.failure = "failed", "policy unavailable: test"
    with TrajectoryWriter(out) as writer:
        for trajectory in trajectories:
            writer.add(trajectory)
    kept = TrajectoryWriter(out, resume=True).previous
    assert [t.id for t in kept] == [t.id for t in trajectories[1:]]
    assert [t.messages for t in read_jsonl(out)] == [t.messages for t in trajectories[1:]]
    assert all(image.to_pil().size == (24, 16) for t in read_jsonl(out) for image in t.images)


def test_the_bench_report_shows_each_messages_images_from_inside_the_report(tmp_path):
    config = BenchConfig((ENV_ID,), ("scripted:oracle", "scripted:random"), report=tmp_path / "report")
    write_report(config, bench(config))
    moved = tmp_path / "moved"  # the report reads anywhere: its pages refer to files inside it
    shutil.move(tmp_path / "report", moved)
    for agent in ("scripted_oracle", "scripted_random"):
        index = (moved / "episodes" / agent / "index.html").read_text()
        pages = dict(
            re.findall(r'<tr id="([^"]+)"><td><a href="(\d+\.html)">', index)
        )  # trajectory id -> page
        for t in read_jsonl(moved / "trajectories" / f"{agent}.jsonl"):
            images = shown_images(moved / "episodes" / agent / pages[t.id])
            # the prompt's picture, then the second look's after each wrong answer
            assert [sha for _, sha in images] == [i.sha256[:12] for m in t.messages for i in m.images]
            assert all(
                path.is_file() and path.parent == (moved / "trajectories" / "images").resolve()
                for path, _ in images
            )
    random_pages = (moved / "episodes" / "scripted_random").glob("*.html")
    assert any(len(shown_images(page)) >= 2 for page in random_pages)  # observations show pictures too


def test_compare_pages_copy_the_images_they_show_into_their_folder(tmp_path):
    for agent in ("scripted:oracle", "scripted:random"):
        specs = [EpisodeSpec(env_config(ENV_ID), task) for task in ("colour-red", "colour-blue")]
        Runner(make_policy(agent)).run(specs, tmp_path / "runs" / f"{agent.split(':')[1]}.jsonl")
    runs = load_runs([tmp_path / "runs" / "oracle.jsonl", tmp_path / "runs" / "random.jsonl"])
    write_compare_view(tmp_path / "view", compare_runs(runs), runs)
    pages = sorted((tmp_path / "view" / "pairs").glob("*.html"))
    assert pages, "oracle and random differ on every task"
    for page in pages:
        images = shown_images(page)
        assert images and all(
            path.is_file() and path.parent == (tmp_path / "view" / "images").resolve() for path, _ in images
        )


def test_a_text_env_report_has_no_images(tmp_path):
    config = BenchConfig(("gfcr/ToolUse-v0",), ("scripted:oracle",), num_tasks=2, report=tmp_path / "report")
    write_report(config, bench(config))
    pages = list((tmp_path / "report" / "episodes").rglob("*.html"))
    assert pages and not any("<img" in page.read_text() for page in pages)
    assert not (tmp_path / "report" / "trajectories" / "images").exists()
