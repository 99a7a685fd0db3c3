"""Every `python` block of docs/integrations.md runs, in order, against live `gfcr serve-env`s
(`URL`: a default server; `GOLD_URL`: one started with `--send-gold`, for the oracle)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest.importorskip("openenv", reason="the remote extra is not installed: pip install -e '.[remote]'")
pytest.importorskip("ray", reason="the ray extra is not installed: pip install -e '.[ray]'")

DOC = Path(__file__).parents[2] / "docs" / "integrations.md"


def test_the_integration_guide_runs(tooluse_server, tooluse_gold_server, monkeypatch):
    url, token = tooluse_server
    monkeypatch.setenv("GFCR_SERVE_TOKEN", token)  # openenv's clients take it from the headers below
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(blocks) >= 5
    namespace: dict = {"URL": url, "GOLD_URL": tooluse_gold_server[0], "TOKEN": token}
    for block in blocks:
        code = block.replace("base_url=URL)", 'base_url=URL, headers={"Authorization": f"Bearer {TOKEN}"})')
        exec(compile(code, str(DOC), "exec"), namespace)
