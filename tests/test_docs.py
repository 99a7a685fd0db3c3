"""Every code block of README.md and docs/*.md runs as written, or says why not.

The convention (for whoever writes docs):
- ```python blocks run as they are, top to bottom, in one namespace per document.
- A block that cannot run as it is follows an HTML comment that makes it whole:
  `<!-- setup: <python lines> -->` runs those lines first, in the same namespace (for a bash
  block, shell lines); `<!-- not run: <reason> -->` skips the block, for what truly cannot run
  here (a GPU, vLLM, a long training run, a server that blocks).
- ```bash blocks run as one `bash -e` script each, in the document's temporary folder.
- ```toml blocks must parse. Other languages (yaml, text) are shown, not run.
Each document runs in its own temporary folder holding `examples/` (linked) and `runs/tiny-model`
(the tests' tiny model), so the blocks may write files and name the tiny model as the docs do.
docs/integrations.md has its own runner against live servers (tests/integrations/test_docs_integrations.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import tomllib
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
OWN_RUNNER = {"docs/integrations.md"}  # run by tests/integrations/test_docs_integrations.py
DOCS = sorted(
    str(p.relative_to(ROOT)) for p in [ROOT / "README.md", *(ROOT / "docs").glob("*.md")]
    if str(p.relative_to(ROOT)) not in OWN_RUNNER
)  # fmt: skip
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(\w*)[^\n]*\n(.*?)^(?P=indent)```[ \t]*$", re.DOTALL | re.MULTILINE
)
MARKER = re.compile(r"<!--\s*(setup|not run):(.*?)-->\s*\Z", re.DOTALL)
BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language, code, first line and the marker before it, if any."""

    language: str
    code: str
    line: int
    marker: str | None = None  # "setup" or "not run"
    marker_text: str = ""


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a markdown text, each with the HTML-comment marker just before it."""
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip()
        marker = MARKER.search(before[before.rfind("<!--") :]) if before.endswith("-->") else None
        line = text.count("\n", 0, match.start()) + 2
        kind, body = (marker.group(1), textwrap.dedent(marker.group(2)).strip()) if marker else (None, "")
        found.append(Block(match.group(2), textwrap.dedent(match.group(3)), line, kind, body))
    return found


def test_markers_are_read():
    text = "x\n<!-- setup: a = 1\nb = 2 -->\n```python\nprint(a)\n```\n\n<!-- not run: GPU -->\n\n```bash\nvllm\n```\n"
    first, second = blocks(text)
    assert (first.marker, first.marker_text, first.code, first.line) == (
        "setup",
        "a = 1\nb = 2",
        "print(a)\n",
        5,
    )
    assert (second.marker, second.marker_text, second.language) == ("not run", "GPU", "bash")
    (indented,) = blocks("- a list item:\n\n  <!-- setup: x = 1 -->\n  ```python\n  print(x)\n  ```\n")
    assert (indented.code, indented.marker_text) == ("print(x)\n", "x = 1")


@pytest.fixture
def doc_folder(tmp_path, tiny_model, monkeypatch):
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    (tmp_path / "runs").mkdir()
    shutil.copytree(tiny_model, tmp_path / "runs" / "tiny-model")  # a copy: a doc may write over it
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("doc", DOCS)
def test_every_code_block_runs(doc, doc_folder, monkeypatch):
    # The blocks run as a script's __main__ module does: their classes pickle by name, and their
    # `if __name__ == "__main__":` blocks run.
    module = types.ModuleType("__main__")
    monkeypatch.setitem(sys.modules, "__main__", module)
    namespace = module.__dict__
    for block in blocks((ROOT / doc).read_text()):
        where = f"{doc}:{block.line}"
        if block.marker == "not run":
            assert block.marker_text, f"{where}: a `not run` marker needs its reason"
            continue
        if block.language == "python":
            if block.marker == "setup":
                exec(compile(block.marker_text, f"{where} (setup)", "exec"), namespace)
            exec(compile(block.code, where, "exec"), namespace)
        elif block.language in ("bash", "sh", "shell", "console"):
            setup = block.marker_text + "\n" if block.marker == "setup" else ""
            _run_shell(setup + block.code, where, doc_folder)
        elif block.language == "toml":
            assert block.marker != "setup", f"{where}: a toml block takes no setup"
            tomllib.loads(block.code)


def _run_shell(script: str, where: str, folder: Path) -> None:
    """Run a bash block as one script that stops at the first failing command."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", "COLUMNS": "200"}
    result = subprocess.run(["bash", "-e", "-c", script], cwd=folder, env=env, capture_output=True, text=True,
                            timeout=300)  # fmt: skip
    assert result.returncode == 0, (
        f"{where}: exited {result.returncode}\n{script}\n{result.stdout}\n{result.stderr}"
    )
