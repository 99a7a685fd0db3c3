"""Verified fragments: SQL queries that executed and patches that passed, read from a trajectory.

An env verifies these as it runs: the SQL env answers each `execute_sql(query)` with its result
(or "Error: ..."), and `submit_sql(query)` with the verdict; the SWE env judges the episode's diff
by the project's tests and records it as the final step's state (`{"patch": diff}`) with the
signal `resolved`. The fragments are read from the trajectory alone (its messages, signals and
final state): the skills module knows no env.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from gfcr.core import Trajectory
from gfcr.skills.skill import Skill, tool_calls

SQL_TOOLS = ("execute_sql", "submit_sql")  # the SQL env's tools whose `query` argument is SQL
_TABLE = re.compile(r"\b(?:FROM|JOIN)\s+[\"`\[]?(\w+)", re.IGNORECASE)
_CHANGED_FILE = re.compile(r"^\+\+\+ b/(\S+)", re.MULTILINE)
_MAX_DESCRIPTION = 300


def verification(trajectory: Trajectory, verified: str) -> dict[str, Any]:
    """What admitted a fragment: `verified` in words, the episode's reward and the env's signals.

    >>> from gfcr.core import Step
    >>> episode = Trajectory("e", "t", "?", [Step("", "", 1.0, True, False, {"resolved": True})])
    >>> verification(episode, "tests passed")
    {'verified': 'tests passed', 'reward': 1.0, 'signals': {'resolved': True}}
    """
    return {"verified": verified, "reward": trajectory.reward, "signals": dict(trajectory.signals)}


def task_question(prompt: str) -> str:
    """A short description of a task: its first line that asks a question ("Question: ..."), else
    its first line (a prompt that opens with a whole schema would drown a skill's text).

    >>> task_question("CREATE TABLE t (a INT);\\n\\nQuestion: How many rows?\\n\\nAnswer with SQL.")
    'Question: How many rows?'
    """
    lines = [line.strip() for line in prompt.splitlines() if line.strip()]
    asking = [line for line in lines if line.endswith("?")]
    return (asking or lines or [""])[0][:_MAX_DESCRIPTION]


def extract_sql_queries(trajectory: Trajectory) -> list[Skill]:
    """The SQL queries of a trajectory that ran: each `execute_sql` answered without an error,
    and the `submit_sql` answer (graded correct when the episode succeeded).

    >>> from gfcr.core import Message, ToolCall
    >>> t = Trajectory("gfcr/SQL-v0", "chinook/1", "Question: How many artists?", messages=[
    ...     Message("assistant", "", (ToolCall("execute_sql", {"query": "SELECT COUNT(*) FROM Artist"}),)),
    ...     Message("tool", "| COUNT(*) |\\n| 275 |"),
    ...     Message("assistant", "", (ToolCall("execute_sql", {"query": "SELECT nope"}),)),
    ...     Message("tool", "Error: no such column: nope")])
    >>> [(s.name, s.body, s.verification["verified"]) for s in extract_sql_queries(t)]
    [('sql Artist', 'SELECT COUNT(*) FROM Artist', 'query executed')]
    """
    found, pending = [], []  # pending: (tool, query) of calls still waiting for their result, in order
    for message in trajectory.messages:
        if message.role == "assistant":
            pending += [(c.name, c.arguments.get("query")) for c in tool_calls(message)]
        elif message.role == "tool" and pending:
            tool, query = pending.pop(0)
            if tool in SQL_TOOLS and isinstance(query, str) and not message.text.startswith("Error"):
                verified = "query executed" if tool == "execute_sql" else "submitted query graded correct"
                found.append(_fragment(trajectory, "sql_query", _sql_name(query), query.strip(), verified))
    return list({skill.id: skill for skill in found}.values())  # a query run twice is one fragment


def extract_patch(trajectory: Trajectory) -> Skill | None:
    """The diff of a trajectory whose patch the project's tests passed (signal `resolved`), as the
    env recorded it in the final step's state; None otherwise.

    >>> from gfcr.core import Step
    >>> diff = "--- a/m.py\\n+++ b/m.py\\n@@ -1 +1 @@\\n-x = 1\\n+x = 2\\n"
    >>> step = Step("", "", 1.0, True, False, {"resolved": True}, state={"patch": diff})
    >>> extract_patch(Trajectory("gfcr/SWE-v0", "swe/m-0", "m: a test fails", [step])).name
    'patch m.py'
    """
    if not trajectory.steps or not trajectory.signals.get("resolved"):
        return None
    patch = (trajectory.steps[-1].state or {}).get("patch", "")
    if not patch:
        return None
    files = list(dict.fromkeys(_CHANGED_FILE.findall(patch)))
    name = "patch " + " ".join(files) if files else "patch " + hashlib.sha256(patch.encode()).hexdigest()[:8]
    return _fragment(trajectory, "patch", name, patch, "tests passed")


def _sql_name(query: str) -> str:
    tables = list(dict.fromkeys(_TABLE.findall(query)))
    return "sql " + " ".join(tables) if tables else "sql query"


def _fragment(trajectory: Trajectory, kind: str, name: str, body: str, verified: str) -> Skill:
    return Skill(
        name=name,
        kind=kind,
        description=task_question(trajectory.prompt),
        body=body,
        source_task=trajectory.task_id,
        source_trajectory=trajectory.id,
        policy_version=trajectory.provenance.policy_version,
        verification=verification(trajectory, verified),
    )
