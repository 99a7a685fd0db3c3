"""What a wheel of gfcr holds: pyproject lists packages explicitly (the package-dir mapping needs
it), so a new sub-package missing from the list would be absent from every non-editable install;
and a wheel built from the tree, installed (not editable) in a fresh venv, is a working gfcr."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_in_the_wheel():
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = set()
    for package, folder in setuptools["package-dir"].items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([package, *parts]))
    missing = sorted(found - set(setuptools["packages"]))
    assert not missing, f"add {missing} to [tool.setuptools] packages in pyproject.toml"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> tuple[Path, str]:
    """A wheel of the working tree as a fresh clone holds it (tracked and new, not ignored, files),
    built from a copy (the build writes build/ and *.egg-info there) with the venv's setuptools:
    nothing is downloaded. Returns the wheel and the build's output."""
    tmp = tmp_path_factory.mktemp("wheel")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():  # a file deleted but not yet committed is listed too
            (tmp / "src" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tmp / "src" / name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-v",
         "-w", str(tmp / "dist"), str(tmp / "src")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout + build.stderr
    (built,) = (tmp / "dist").glob("gfcr-*.whl")
    return built, build.stdout + build.stderr


def test_the_wheel_builds_without_setuptools_warnings(wheel):
    _, output = wheel
    # setuptools warns by class (SetuptoolsDeprecationWarning: ...); distutils' "warning: build_py:
    # byte-compiling is disabled" is only PYTHONDONTWRITEBYTECODE at work
    warnings = [line for line in output.splitlines() if re.search(r"[A-Za-z_]Warning\b", line)]
    assert not warnings, "\n".join(warnings)


def test_the_wheel_installed_in_a_fresh_venv_is_a_working_gfcr(wheel, tmp_path):
    built, _ = wheel
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=60)
    target = venv / "bin" / "python"
    site = subprocess.run(
        [target, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    # gfcr's dependencies from this venv (a .pth line adds its folder, not its editable gfcr hook)
    (Path(site) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(target), "install", "-q", "--no-deps", "--no-index",
         str(built)],
        check=True, timeout=120,
    )  # fmt: skip

    def gfcr(*args: str) -> str:
        result = subprocess.run(
            [venv / "bin" / "gfcr", *args], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    assert "gfcr/Math-v0" in gfcr("list")
    gfcr("run", "gfcr/Math-v0", "--agent", "scripted:oracle", "-n", "1", "-e", "split=AIME2024",
         "--out", str(tmp_path / "t.jsonl"))  # fmt: skip
    assert json.loads((tmp_path / "t.jsonl").read_text())["total_reward"] == 1.0
    where = subprocess.run(
        [target, "-c", "import gfcr, importlib.resources as r; print(gfcr.__file__); "
         "print(r.files('gfcr.envs.browser.apps').joinpath('static/app.css').read_text()[:200])"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    module, css = where.split("\n", 1)
    assert module.startswith(site), f"gfcr was imported from {module}, not from the wheel in {site}"
    assert "{" in css, "the browser apps' style sheet is missing from the installed package"
