"""gfcr's built-in suites, one function each, declared as `gfcr.suites` entry points in pyproject.toml.

They live with the envs whose ids and keywords they name; `gfcr.suites` (the core) finds them
through the entry points, as it finds any installed package's suites, and builds one only when
it is listed or made.

>>> suite = smoke()
>>> suite.name, len(suite) > 0
('smoke', True)
>>> from gfcr.suites import make_suite
>>> make_suite("sql").entries == sql().entries
True
"""

from __future__ import annotations

from gfcr.suites import Suite, SuiteEntry


def math() -> Suite:
    return Suite(
        "math",
        "Every MMATH (MATH-500 subset, AIME 2024/2025, CNMO) and CHAMP problem, and 5 samples "
        "of each reasoning-gym generator.",
        (
            SuiteEntry("gfcr/Math-v0", {"dataset": "mmath"}),
            SuiteEntry("gfcr/Math-v0", {"dataset": "champ"}),
            SuiteEntry("gfcr/Math-v0", {"dataset": "reasoning_gym"}, num_tasks=500),
        ),
    )


def smoke() -> Suite:
    families = [
        SuiteEntry("gfcr/Math-v0", {"dataset": "mmath"}, num_tasks=4),
        SuiteEntry("gfcr/Math-v0", {"dataset": "champ"}, num_tasks=2),
        SuiteEntry("gfcr/Math-v0", {"dataset": "reasoning_gym", "size": 10}, num_tasks=4),
        SuiteEntry("gfcr/Math-v0", {"dataset": "mmath", "tools": ["calculator"]}, num_tasks=2),
        SuiteEntry("gfcr/Code-v0", {"dataset": "humaneval"}, num_tasks=3),
        SuiteEntry("gfcr/CodeInteractive-v0", {"dataset": "humaneval"}, num_tasks=2),
        SuiteEntry("gfcr/SQL-v0", {"dataset": "all"}, num_tasks=3),
        SuiteEntry("gfcr/SQL-v0", {"dataset": "chinook", "mode": "single_turn"}, num_tasks=1),
        SuiteEntry("gfcr/Dialogue-v0", {"domain": "airline"}, num_tasks=2),
        SuiteEntry("gfcr/Dialogue-v0", {"domain": "retail"}, num_tasks=2),
        SuiteEntry(
            "gfcr/Browser-v0", {"dataset": ["click-test", "enter-text", "login-user"], "num_seeds": 1}
        ),
        SuiteEntry("gfcr/Browser-v0", {"dataset": "apps"}, num_tasks=3),
        SuiteEntry("gfcr/Vision-v0", {}, num_tasks=8),  # spread evenly: every kind, several levels
    ]
    return Suite("smoke", "A few tasks of each env family that exists, for a quick check.", tuple(families))


def sql() -> Suite:
    return Suite(
        "sql",
        "Every bundled SQL question (Chinook, tau2 retail and airline) on SQLite, multi-turn with tools, "
        "and once more single-turn.",
        (
            SuiteEntry("gfcr/SQL-v0", {"dataset": "all"}),
            SuiteEntry("gfcr/SQL-v0", {"dataset": "all", "mode": "single_turn"}),
        ),
    )


def dialogue() -> Suite:
    return Suite(
        "dialogue",
        "Every tau2-bench airline (50) and retail (114) task, with the scripted user.",
        (
            SuiteEntry("gfcr/Dialogue-v0", {"domain": "airline"}),
            SuiteEntry("gfcr/Dialogue-v0", {"domain": "retail"}),
        ),
    )


def code() -> Suite:
    return Suite(
        "code",
        "Every HumanEval problem, single-turn (Code-v0) and with a Python session and visible tests "
        "(CodeInteractive-v0).",
        (
            SuiteEntry("gfcr/Code-v0", {"dataset": "humaneval"}),
            SuiteEntry("gfcr/CodeInteractive-v0", {"dataset": "humaneval"}),
        ),
    )


def browser() -> Suite:
    return Suite(
        "browser",
        "Every task of gfcr's web apps (shop, booking, mail) and 5 seeds of each of MiniWoB's 130 pages, "
        "in headless Chromium.",
        (
            SuiteEntry("gfcr/Browser-v0", {"dataset": "apps"}),
            SuiteEntry("gfcr/Browser-v0", {"dataset": "miniwob", "num_seeds": 5}),
        ),
    )


def swe() -> Suite:
    return Suite(
        "swe",
        "Every gfcr/SWE-v0 task: a bug in inflection, parse, cachetools or toolz, judged by its own tests.",
        (SuiteEntry("gfcr/SWE-v0", {"dataset": "all"}),),
    )
