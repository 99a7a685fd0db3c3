"""SQL proposals: a question and its gold query, executed read-only on the named database.

The gold query must run (through the env's read-only engine and its static check) and return at
least one row; the solver is then graded against its result, like any question's. It runs twice:
`Verified.rerun_agrees` says whether it returned the same rows both times (a query over
`random()` or the current time does not).
"""

from __future__ import annotations

from collections.abc import Sequence

from gfcr.core import Task
from gfcr.envs.proposals.base import Verified, text_gold
from gfcr.envs.sql.env import SQLEnv
from gfcr.errors import GfcrError
from gfcr.proposals import Rejected, blind_task, parse_sections

FORMAT = """Write it in tagged sections:
<database>the database it is about (one of those shown)</database>
<question>the question, in plain words</question>
<sql>the one SELECT query that answers it</sql>"""


class SQLProposals:
    """The SQL family's proposals (`gfcr.envs.proposals.ProposalFamily`)."""

    format = FORMAT

    def describe(self, task: Task, env: SQLEnv) -> str:
        return f"Database: {task.metadata['database']}\n{env.render_prompt(task)}"

    def verify(self, text: str, env: SQLEnv, task_id: str, parents: Sequence[Task]) -> Verified:
        sections = parse_sections(text, ["question", "sql"], ["database"])
        known = {parent.metadata["database"]: parent for parent in parents}
        name = sections.get("database", next(iter(known)))
        if name not in known:
            raise Rejected("invalid", f"unknown database {name!r}; use one of those shown: {sorted(known)}")
        metadata = {**known[name].metadata, "difficulty": "generated", "features": [], "evidence": None}
        task = Task(task_id, sections["question"], sections["sql"], f"sql/{name}", metadata)
        try:
            gold = env.database(task).gold(sections["sql"])
        except GfcrError as e:  # it fails, or the engine refuses it (not read-only, unknown table …)
            raise Rejected("invalid", f"the gold query does not run: {e}") from e
        if not gold.rows:
            raise Rejected("invalid", "the gold query returns no rows; ask something with an answer")
        return Verified(task, rerun_agrees=env.database(task).gold(sections["sql"]).rows == gold.rows)

    def withheld(self, task: Task) -> Task:
        """The question withheld, the database kept: the env still shows its schema (the metadata
        names it), so a blind query may read the tables, but not what is asked of them."""
        return blind_task(task)

    def gold_from(self, data: object) -> str:
        """A SQL task's gold is its query, a string (the database is in the task's metadata).

        >>> SQL.gold_from("SELECT 1")
        'SELECT 1'
        """
        return text_gold(data, "a SQL task's query")


SQL = SQLProposals()
