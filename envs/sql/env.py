"""`gfcr/SQL-v0`: answer a question about a real database with one SQL query, graded by execution.

Multi-turn (default): the prompt holds the question and the schema (tables, columns, types, keys,
sample rows); the agent may explore with `execute_sql(query)` — the result comes back as a text
table — and answers with `submit_sql(query)`, which ends the episode. Single-turn
(`mode="single_turn"`): the reply's last ```sql block is the answer.

Reward 1.0 when the submitted query's result matches the gold query's (`results_match`: rows
as a multiset, in order when the gold has an outermost ORDER BY, columns in any order, floats
within `float_tol`, 1e-9 relative), else 0.0 — a failing, refused or missing query, the turn limit,
or a step whose tool calls go past its budget (`max_tool_calls`, `step_time_s`: the episode is truncated).
Signals: `format_ok` (the action could be used: a tool call, or an SQL block in single-turn
mode), `executed` (its query ran), `match`, `turns` (turns taken so far); on a step that called
`execute_sql`, `explored` and `explored_level`: how close its best query came to the gold result
(1.0 the same result, 0.5 the gold's columns and at least one of its rows, 0.0 otherwise or an
error), which the family's process rule reads (`process_rules`: progress in that level). The grading is
`SQLVerifier`'s, which also re-judges saved trajectories offline.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar, Literal

from gfcr.core import Action, Message, Task, ToolSpec
from gfcr.core.tools import time_left
from gfcr.core.trajectory import Signals
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, DEFAULT_MAX_OBSERVATION_CHARS, Outcome, TextEnv
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.sql.data.catalog import EngineSpec, questions_for, schema_prompt
from gfcr.envs.sql.data.questions import SQLQuestion
from gfcr.envs.sql.engines.database import DEFAULT_TIMEOUT_S, Database
from gfcr.envs.sql.engines.normalize import normalize_rows
from gfcr.envs.sql.matching import FLOAT_TOL, match_normalized, shares_a_row
from gfcr.envs.sql.prompt import ENGINE_NAMES, render_result
from gfcr.envs.sql.verifier import SQLVerifier, extract_sql
from gfcr.envs.tasks import TaskSource, with_level
from gfcr.errors import ConfigError, QueryError
from gfcr.filter.process import ProcessScorer, ProgressScorer

Mode = Literal["multi_turn", "single_turn"]
MULTI_TURN_HINT = (
    "Explore the database with execute_sql(query) if you need to, then answer with submit_sql(query): "
    "one {engine} SELECT statement whose result answers the question. Return exactly the columns asked for; "
    "only the submitted query is graded, and you can submit once."
)
SINGLE_TURN_HINT = "Answer with one {engine} SELECT statement in a ```sql code block; its result is graded."


def explored_level(signals: Signals) -> float | None:
    """The level a step reached: how close its explored queries came to the gold result."""
    return float(signals["explored_level"]) if signals.get("explored") else None


class SQLEnv(TextEnv):
    """Text-to-SQL on Chinook and tau2 (or your Spider/BIRD files) on SQLite, DuckDB or PostgreSQL.

    >>> env = SQLEnv(dataset="chinook")
    >>> obs, info = env.reset(options={"task_id": "chinook/001"})
    >>> call = '<tool_call>{{"name": "{}", "arguments": {{"query": "{}"}}}}</tool_call>'
    >>> env.step(call.format("execute_sql", "SELECT COUNT(*) FROM Track"))[0]
    '1 row\\nCOUNT(*)\\n3503'
    >>> answer = call.format("submit_sql", "SELECT COUNT(TrackId) FROM Track")
    >>> obs, reward, terminated, truncated, info = env.step(answer)
    >>> reward, terminated, info["signals"]["match"]
    (1.0, True, True)
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "executed": False,
        "match": False,
        "turns": 0,
        "explored": False,
        "explored_level": 0.0,
    }
    # The family's process rule (`[judge.process] scorer = "rules"`): a step scores its progress in
    # how close its queries came to the gold result; the right columns alone, or the same query
    # again, pay nothing.
    process_rules: ClassVar[ProcessScorer | None] = ProgressScorer(explored_level)

    def __init__(
        self,
        dataset: str | Sequence[str] = "all",
        *,
        engine: str = "sqlite",
        mode: Mode = "multi_turn",
        max_turns: int | None = None,
        max_rows: int = 20,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        float_tol: float = FLOAT_TOL,
        sample_rows: int = 3,
        cache_dir: str | Path | None = None,
        db_dir: str | Path | None = None,
        system_prompt: str | None = None,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
    ) -> None:
        if mode not in ("multi_turn", "single_turn"):
            raise ConfigError(f"mode must be 'multi_turn' or 'single_turn', got {mode!r}")
        if max_rows < 1 or timeout_s <= 0:
            raise ConfigError(f"max_rows must be >= 1 and timeout_s > 0, got {max_rows} and {timeout_s}")
        self.engine_spec = EngineSpec.parse(engine, cache_dir)
        self.mode: Mode = mode
        self.max_rows, self.timeout_s, self.float_tol, self.sample_rows = (
            max_rows,
            timeout_s,
            float_tol,
            sample_rows,
        )
        questions, self._byo_files = self._questions(dataset, db_dir)
        self.verifier = SQLVerifier(
            engine, cache_dir=cache_dir, databases=self._byo_files, float_tol=float_tol, timeout_s=timeout_s
        )
        tools = [ToolSpec.from_function(self.execute_sql), ToolSpec.from_function(self.submit_sql)]
        super().__init__(
            TaskSource.from_tasks(_source_name(dataset), [self._task(q) for q in questions]),
            tools=tools if mode == "multi_turn" else (),
            system_prompt=system_prompt,
            max_turns=max_turns or (10 if mode == "multi_turn" else 1),
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        self._verdict: Outcome | None = None  # set by submit_sql during a step
        self._executed = False  # whether the step's last execute_sql ran
        self._explored: float | None = None  # the best level of the step's execute_sql calls

    # -- tasks and prompts ---------------------------------------------------------------------

    def _questions(
        self, dataset: str | Sequence[str], db_dir: str | Path | None
    ) -> tuple[list[SQLQuestion], dict[str, Path]]:
        names = [dataset] if isinstance(dataset, str) else list(dataset)
        questions, files = [], {}
        for name in names:
            found, byo = questions_for(name, db_dir)
            questions += found
            files.update(byo)
        if files and self.engine_spec.dialect != "sqlite":
            raise ConfigError(
                "Spider/BIRD databases are SQLite files; "
                f"use engine='sqlite', not {self.engine_spec.dialect!r}"
            )
        return questions, files

    def _task(self, question: SQLQuestion) -> Task:
        metadata = with_level(
            {
                "database": question.database,
                "difficulty": question.difficulty,
                "features": question.features,
                "dialect": self.engine_spec.dialect,
                "mode": self.mode,
                "evidence": question.evidence,
            }
        )
        return Task(
            question.id,
            question.question,
            question.gold_for(self.engine_spec.dialect),
            f"sql/{question.database}",
            metadata,
        )

    def database(self, task: Task | None = None) -> Database:
        """The database of `task` (default: the current one), opened read-only."""
        task = task or self.task
        if task is None:
            raise ConfigError("no task: call reset() first or pass a task")
        return self.verifier.database(task)

    def render_prompt(self, task: Task) -> str:
        database = self.database(task)
        engine = ENGINE_NAMES[database.dialect]
        hint = (MULTI_TURN_HINT if self.mode == "multi_turn" else SINGLE_TURN_HINT).format(engine=engine)
        evidence = f"\nHint: {task.metadata['evidence']}" if task.metadata.get("evidence") else ""
        schema = schema_prompt(database, task.metadata["database"], self.sample_rows)
        return f"{schema}\n\nQuestion: {task.prompt}{evidence}\n\n{hint}"

    # -- tools ---------------------------------------------------------------------------------

    def execute_sql(self, query: str) -> str:
        """Run a read-only SQL query on the database and see its result (the first rows and the row count).

        Args:
            query: One SELECT statement in the database's SQL dialect.
        """
        try:
            result = self.database().execute(query, max_rows=10_000, timeout_s=time_left(self.timeout_s))
        except QueryError as e:
            self._executed = False
            self._explored = self._explored or 0.0
            return f"Error: {e}"
        self._executed = True
        self._explored = max(self._explored or 0.0, self._level(result.rows, result.truncated))
        return render_result(result, self.max_rows)

    def _level(self, rows: Sequence[Sequence[object]], truncated: bool) -> float:
        """1.0 for the gold's result, 0.5 for its columns with one of its rows at least, else 0.0."""
        assert self.task is not None
        gold = self.database().gold(self.task.gold)
        pred = normalize_rows(rows)
        ordered, tol = gold.ordered, self.float_tol
        if not truncated and match_normalized(pred, gold.rows, order_matters=ordered, float_tol=tol):
            return 1.0
        return 0.5 if shares_a_row(pred, gold.rows) else 0.0

    def submit_sql(self, query: str) -> str:
        """Submit your final answer: one SELECT statement whose result answers the question. Ends the episode.

        Args:
            query: One SELECT statement in the database's SQL dialect.
        """
        self._verdict = self._grade(query)
        return self._verdict.observation

    # -- the step --------------------------------------------------------------------------------

    def respond(self, action: Action) -> Outcome:
        if self.mode == "single_turn":
            query = extract_sql(action.text)
            if query is None:
                message = "No SQL found: put one SELECT statement in a ```sql code block."
                return Outcome(message, terminated=True, signals={"format_ok": False})
            return self._grade(query)
        if not action.tool_calls:
            return Outcome(
                "No tool call found: explore with execute_sql(query) or answer with submit_sql(query).",
                signals={"format_ok": False},
            )
        calls = action.tool_calls
        submit = next((i for i, call in enumerate(calls) if call.name == "submit_sql"), None)
        if submit is not None:  # calls after the first submission are not run
            calls = calls[: submit + 1]
        self._verdict, self._executed, self._explored = None, False, None
        outcome = self.run_tools(Action(action.text, calls))
        if self._verdict is not None:
            return Outcome(
                outcome.observation,
                self._verdict.reward,
                True,
                signals=self._verdict.signals,
                messages=outcome.messages,
            )
        explored: Signals = {}
        if self._explored is not None:
            explored = {"explored": True, "explored_level": self._explored}
        return Outcome(
            outcome.observation,
            signals={"format_ok": True, "executed": self._executed, **explored},
            messages=outcome.messages,
        )

    def episode_signals(self) -> dict[str, float | bool]:
        return {"turns": self.turn}

    def _grade(self, query: str) -> Outcome:
        assert self.task is not None  # step() checks reset() was called
        verdict, text = self.verifier.review(self.task, query)
        return Outcome(text, reward=verdict.reward, terminated=True, signals=verdict.signals)

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        if task.metadata.get("mode") == "single_turn":
            return f"```sql\n{task.gold}\n```"
        call = {"name": "submit_sql", "arguments": {"query": task.gold}}
        return f"<tool_call>{json.dumps(call)}</tool_call>"


def _source_name(dataset: str | Sequence[str]) -> str:
    names = [dataset] if isinstance(dataset, str) else list(dataset)
    return "sql/" + "+".join(Path(name).stem if name.endswith(".json") else name for name in names)
