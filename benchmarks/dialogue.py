"""Episodes per second of `gfcr/Dialogue-v0`, and its verdicts and evaluation time beside tau2-bench's.

Run from the repository root; tau2-bench (with its dependencies) lives in its own venv, made once
with `bash benchmarks/setup_tau2.sh`:

    .venv/bin/python benchmarks/dialogue.py --json docs/bench_dialogue.json

One run, single process, `time.perf_counter`, medians of `--repeats`:

- throughput: every airline (50) and retail (114) task, the oracle (`DialogueEnv.oracle`, gold
  calls then the required information) against the scripted user, on the env as made by
  `gymnasium.make` and on its `.unwrapped` env, after one warm-up pass; episodes/s;
- conversations: the oracle's episodes (positives); the same minus their last successful write
  (negatives, every task whose gold changes the database); and `scripted:random` (junk) episodes.
  Each has gfcr's reward from the episode itself;
- gfcr's evaluation time per episode: the verdict at the end of an episode (`judge`, database
  already live), and offline (`evaluate_conversation`: replay the conversation's calls on a fresh
  database), with the gold end state cached and cold;
- tau2-bench (in `benchmarks/.venv-tau2`, by `_dialogue_tau2.py`): `--tau2-sample` conversations
  of each kind judged by its own `evaluate_simulation`, timed; agreement of the rewards; the gold
  end state of every task replayed through its tools against gfcr's; and the cost of building
  its environment and replaying a task's gold calls.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import gymnasium as gym

from gfcr import __version__  # importing gfcr registers gfcr/Dialogue-v0
from gfcr.agents import RandomPolicy
from gfcr.agents.runner.rollout import rollout
from gfcr.core import Message
from gfcr.envs.dialogue import DialogueEnv, evaluate_conversation, gold_state, load_domain
from gfcr.envs.dialogue import evaluation as dialogue_evaluation
from gfcr.envs.dialogue.db import Database
from gfcr.errors import ToolError

BENCH_DIR = Path(__file__).resolve().parent
TAU2_PYTHON = BENCH_DIR / ".venv-tau2" / "bin" / "python"
TAU2_SCRIPT = BENCH_DIR / "_dialogue_tau2.py"
ENV_ID = "gfcr/Dialogue-v0"
DOMAINS = ("airline", "retail")


# ------------------------------------------------------------------------------ gfcr episodes


def oracle_episode(env: Any, task_id: str) -> tuple[list[Message], float, str]:
    """Run the oracle on `task_id`; the env's messages, the reward and how the episode ended."""
    base = env.unwrapped
    env.reset(options={"task_id": task_id})
    while True:
        _, reward, terminated, truncated, _ = env.step(DialogueEnv.oracle(base.task, base.messages))
        if terminated or truncated:
            return list(base.messages), float(reward), "user_stop" if terminated else "max_steps"


def throughput(envs: dict[str, Any], task_ids: list[str], repeats: int) -> dict[str, dict[str, float]]:
    """Median seconds per pass over the tasks, for each env; passes interleave the envs (a busy
    machine then slows them alike)."""
    runs: dict[str, list[float]] = {name: [] for name in envs}
    for _ in range(repeats):
        for name, env in envs.items():
            started = time.perf_counter()
            for task_id in task_ids:
                oracle_episode(env, task_id)
            runs[name].append(time.perf_counter() - started)
    return {
        name: {
            "episodes_per_s": len(task_ids) / statistics.median(seconds),
            "seconds": statistics.median(seconds),
        }
        for name, seconds in runs.items()
    }


def conversations(task_ids: list[str]) -> list[dict[str, Any]]:
    """Oracle, oracle-minus-last-write and random episodes, with gfcr's reward from the episode."""
    env = gym.make(ENV_ID)
    found = []
    for task_id in task_ids:
        messages, reward, ended = oracle_episode(env, task_id)
        found.append(_conversation("oracle", task_id, messages, reward, ended))
        task = env.unwrapped.task
        if gold_state(task).expects_change:
            cut = _without_last_write(task_id, messages)
            found.append(
                _conversation(
                    "oracle minus last write", task_id, cut, evaluate_conversation(task, cut).reward, ended
                )
            )
    policy = RandomPolicy(seed=1)
    for task_id in task_ids:
        trajectory = rollout(env, policy, env_id=ENV_ID, task_id=task_id)
        ended = "user_stop" if trajectory.steps[-1].terminated else "max_steps"
        found.append(
            _conversation(
                "scripted:random", task_id, list(env.unwrapped.messages), trajectory.total_reward, ended
            )
        )
    return found


def _without_last_write(task_id: str, messages: list[Message]) -> list[Message]:
    writes = load_domain(task_id.split("/")[0]).toolkit.writes
    positions = [
        i for i, m in enumerate(messages)
        if m.role == "assistant" and any(c.name in writes for c in m.tool_calls)
        and not messages[i + 1].content.startswith("Error:")
    ]  # fmt: skip
    if not positions:
        return messages
    last = positions[-1]
    return messages[:last] + messages[last + 2 :]  # the call and its result


def _conversation(
    kind: str, task_id: str, messages: list[Message], reward: float, ended: str
) -> dict[str, Any]:
    return {
        "kind": kind,
        "task_id": task_id,
        "messages": messages,
        "gfcr_reward": reward,
        "termination": ended,
    }


def _sample(found: list[dict[str, Any]], per_kind: int) -> list[dict[str, Any]]:
    """`per_kind` conversations of each kind, evenly spaced over the tasks (all if 0)."""
    chosen = []
    for kind in dict.fromkeys(c["kind"] for c in found):
        of_kind = [c for c in found if c["kind"] == kind]
        step = max(1, len(of_kind) // per_kind) if per_kind else 1
        chosen.extend(of_kind[::step][: per_kind or None])
    return chosen


# ------------------------------------------------------------------------------ gfcr evaluation time


def evaluation_times(found: list[dict[str, Any]]) -> dict[str, float]:
    """Median seconds per episode of gfcr's verdict: live at the end of an episode, and offline."""
    tasks = {c["task_id"]: _task(c["task_id"]) for c in found}

    def per_episode(evaluate: Callable[[dict[str, Any]], Any], clear: bool = False) -> float:
        seconds = []
        for conversation in found:
            if clear:
                dialogue_evaluation._GOLD.clear()
            started = time.perf_counter()
            evaluate(conversation)
            seconds.append(time.perf_counter() - started)
        return statistics.median(seconds)

    live = {id(c): _replayed(tasks[c["task_id"]], c["messages"]) for c in found}  # the env's database
    for task in tasks.values():
        gold_state(task)
    return {
        "live_verdict": per_episode(
            lambda c: dialogue_evaluation.judge(tasks[c["task_id"]], live[id(c)], c["messages"])
        ),
        "offline_gold_cached": per_episode(
            lambda c: evaluate_conversation(tasks[c["task_id"]], c["messages"])
        ),
        "offline_gold_cold": per_episode(
            lambda c: evaluate_conversation(tasks[c["task_id"]], c["messages"]), True
        ),
    }


def _task(task_id: str) -> Any:
    return load_domain(task_id.split("/")[0]).task(task_id)


def _replayed(task: Any, messages: list[Message]) -> Database:
    domain = load_domain(task.metadata["domain"])
    tools = domain.toolkit(Database(domain.tables))
    for message in messages:
        for call in message.tool_calls if message.role == "assistant" else ():
            try:
                tools.call(call.name, call.arguments)
            except ToolError:
                pass
    return tools.db


# ------------------------------------------------------------------------------ tau2-bench


def tau2_job(found: list[dict[str, Any]], task_ids: list[str]) -> dict[str, Any]:
    gold_states = {}
    for task_id in task_ids:
        db = gold_state(_task(task_id)).db
        gold_states[task_id] = {f"{table}|{key}": db.get(table, key) for table, key in db.changed_keys()}
    exported = []
    for number, conversation in enumerate(found):
        domain, _, task = conversation["task_id"].partition("/")
        exported.append({
            "id": str(number), "domain": domain, "task": task, "termination": conversation["termination"],
            "messages": _export(conversation["messages"]),
        })  # fmt: skip
    return {"gold_states": gold_states, "conversations": exported}


def _export(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages as tau2-bench reads them: unique call ids, failed calls dropped (their error texts
    differ between the two implementations and they change no state in either)."""
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if message.role == "assistant" and message.tool_calls:
            results = messages[i + 1 : i + 1 + len(message.tool_calls)]
            kept = [
                (c, r)
                for c, r in zip(message.tool_calls, results, strict=True)
                if not r.content.startswith("Error:")
            ]
            ids = [f"call_{len(out)}_{k}" for k in range(len(kept))]
            if kept:
                calls = [
                    {"id": n, "name": c.name, "arguments": c.arguments}
                    for n, (c, _) in zip(ids, kept, strict=True)
                ]
                out.append({"role": "assistant", "tool_calls": calls})
                out.extend(
                    {"role": "tool", "tool_call_id": n, "content": r.content}
                    for n, (_, r) in zip(ids, kept, strict=True)
                )
        elif message.role in ("user", "assistant"):
            out.append({"role": message.role, "content": message.content})
    return out


def run_tau2(job: dict[str, Any]) -> dict[str, Any] | None:
    if not TAU2_PYTHON.exists():
        print(
            f"[dialogue] skipping tau2-bench: {TAU2_PYTHON} not found; run `bash benchmarks/setup_tau2.sh`",
            file=sys.stderr,
        )
        return None
    completed = subprocess.run(
        [str(TAU2_PYTHON), str(TAU2_SCRIPT)], input=json.dumps(job), stdout=subprocess.PIPE, text=True,
        check=False, timeout=3600,
    )  # fmt: skip
    if completed.returncode != 0:
        print(
            f"[dialogue] tau2-bench run failed (exit {completed.returncode}); its stderr is above",
            file=sys.stderr,
        )
        return None
    return json.loads(completed.stdout)


# ------------------------------------------------------------------------------ report


def agreement(found: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for kind in dict.fromkeys(c["kind"] for c in found):
        pairs = [(c, t) for c, t in zip(found, theirs, strict=True) if c["kind"] == kind]
        rows.append({
            "kind": kind, "episodes": len(pairs),
            "gfcr_mean_reward": statistics.mean(c["gfcr_reward"] for c, _ in pairs),
            "tau2_mean_reward": statistics.mean(t["reward"] for _, t in pairs),
            "agree": sum(c["gfcr_reward"] == t["reward"] for c, t in pairs),
            "disagree_tasks": [c["task_id"] for c, t in pairs if c["gfcr_reward"] != t["reward"]],
            "tau2_outputs_differ": [c["task_id"] for c, t in pairs if t["outputs_differ"]],
            "tau2_median_eval_s": statistics.median(t["seconds"] for _, t in pairs),
        })  # fmt: skip
    return rows


def print_report(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=160)
    speed = Table(title="gfcr/Dialogue-v0: the oracle against the scripted user, all 164 tasks")
    for column in ("env", "episodes/s", "seconds per pass"):
        speed.add_column(column, justify="left" if column == "env" else "right")
    for name, row in result["throughput"].items():
        speed.add_row(name, f"{row['episodes_per_s']:,.1f}", f"{row['seconds']:.2f}")
    console.print(speed)

    evaluation = Table(title="Evaluation time per episode (median)")
    evaluation.add_column("evaluator")
    evaluation.add_column("ms/episode", justify="right")
    for name, seconds in result["gfcr_evaluation_s"].items():
        evaluation.add_row(f"gfcr {name.replace('_', ' ')}", f"{seconds * 1e3:.3f}")
    if result.get("tau2"):
        seconds = statistics.median(c["seconds"] for c in result["tau2"]["conversations"])
        evaluation.add_row("tau2-bench evaluate_simulation (EvaluationType.ALL)", f"{seconds * 1e3:.1f}")
        for domain, replay in result["tau2"]["env_replay"].items():
            evaluation.add_row(f"tau2-bench env build + gold replay ({domain}, mean)", f"{replay * 1e3:.1f}")
    console.print(evaluation)

    if result.get("agreement"):
        table = Table(title="Rewards of the same conversations: gfcr's episode vs tau2-bench's evaluator")
        for column in ("conversations", "episodes", "gfcr mean", "tau2 mean", "agree", "disagree on"):
            table.add_column(
                column, justify="left" if column in ("conversations", "disagree on") else "right"
            )
        for row in result["agreement"]:
            shown = ", ".join(row["disagree_tasks"][:6]) + (" …" if len(row["disagree_tasks"]) > 6 else "")
            table.add_row(
                row["kind"], str(row["episodes"]), f"{row['gfcr_mean_reward']:.3f}",
                f"{row['tau2_mean_reward']:.3f}", f"{row['agree']}/{row['episodes']}", shown,
            )  # fmt: skip
        console.print(table)
        gold = result["tau2"]["gold_states"]
        same = gold["tasks"] - len(gold["differ"])
        differ = ", ".join(sorted(gold["differ"])) or "none"
        console.print(
            f"  gold end states equal to tau2-bench's: {same}/{gold['tasks']}; differ: {differ}",
            highlight=False,
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="also write the results to this JSON file")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed passes over the tasks (median reported)"
    )
    parser.add_argument("--skip-tau2", action="store_true", help="measure gfcr only")
    parser.add_argument(
        "--tau2-sample", type=int, default=30,
        help="conversations of each kind judged by tau2-bench, spread over the tasks (0: all; "
        "tau2-bench takes seconds per airline episode)",
    )  # fmt: skip
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    task_ids = [task.id for domain in DOMAINS for task in load_domain(domain).tasks]
    made = gym.make(ENV_ID)
    for task_id in task_ids:  # warm-up: loads both domains, builds the tools, caches gold end states
        oracle_episode(made, task_id)
    envs = {"gymnasium.make (wrappers on)": made, ".unwrapped": made.unwrapped}
    result: dict[str, Any] = {"throughput": throughput(envs, task_ids, args.repeats)}
    found = conversations(task_ids)
    result["gfcr_evaluation_s"] = evaluation_times(found)
    judged = _sample(found, args.tau2_sample)
    tau2 = None if args.skip_tau2 else run_tau2(tau2_job(judged, task_ids))
    if tau2:
        result["tau2"] = tau2
        result["agreement"] = agreement(judged, tau2["conversations"])
    print_report(result)
    if args.json:
        result["meta"] = {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "machine": platform.machine(),
            "gfcr": __version__,
            "repeats": args.repeats,
        }
        if tau2:
            result["tau2"] = {k: v for k, v in tau2.items() if k != "conversations"}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
        print(f"[dialogue] wrote {args.json}", file=sys.stderr)


if __name__ == "__main__":
    main()
