"""`gfcr/Dialogue-v0`: serve a simulated customer under a domain policy, with tools over a database.

Each episode is one tau2-bench task (airline or retail). The observation after `reset` is the
user's opening message; the system message holds the domain's policy. Each action is either a
message to the user (plain text; the observation is the user's reply) or tool calls (the
observation is their results; the user sees nothing). The episode ends when the user ends it
(satisfied, transferred, or giving up), or is truncated at `max_turns` agent actions.

Reward (only at the end, when the user stopped or was transferred): 1.0 if the database equals
the gold end state and the agent told the user every required piece of information, else 0.0.
Signals, on every step: `format_ok`, and at the end `db_match`, `communicated`,
`gold_actions_called` (share of gold actions called, not scored), `expects_change` (the gold end
state differs from the initial one), `user_ended`, `transferred`, `user_gave_up`,
`stop_deferred` (the LLM user's stop was held back until the agent's writes), and
`simulator_failure`: the episode failed because of the user simulator or a crash of a tool (gfcr's
infrastructure), not the agent, and is to be left out of pass^k.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from gfcr.core import Action, Message, Task, ToolCall  # noqa: F401  (ToolCall: in the doctest)
from gfcr.core.admission import AdmissionConfig
from gfcr.core.config import from_dict
from gfcr.envs.base import DEFAULT_MAX_ACTION_CHARS, DEFAULT_MAX_OBSERVATION_CHARS, Outcome, TextEnv
from gfcr.envs.budget import DEFAULT_MAX_TOOL_CALLS, DEFAULT_STEP_TIME_S
from gfcr.envs.dialogue.data import load_domain, task_source
from gfcr.envs.dialogue.db import Database
from gfcr.envs.dialogue.evaluation import ConversationJudgement, gold_state, judge, unsaid
from gfcr.envs.dialogue.oracle import oracle_action
from gfcr.envs.dialogue.users.llm import LLMUser
from gfcr.envs.dialogue.users.scripted import ScriptedUser
from gfcr.envs.dialogue.users.simulator import (
    ENDS_THAT_COUNT,
    FAILURE_FLAGS,
    STOP_DEFERRED,
    Progress,
    UserSimulator,
    UserTurn,
)
from gfcr.envs.tasks import TaskSource
from gfcr.errors import ConfigError

TOOL_CRASHED = "tool_crashed"  # a tool raised something other than ToolError: gfcr's fault, not the agent's
SYSTEM_PROMPT = """You are a customer service agent. Help the user with their request, following the \
policy below.

In each turn, do one of two things: send a message to the user (plain text), or call tools with \
<tool_call>{{"name": "<tool>", "arguments": {{...}}}}</tool_call> blocks. Tool results come back to you, \
not to the user, and text written beside a tool call is not shown to the user.

<policy>
{policy}
</policy>"""


class DialogueEnv(TextEnv):
    """Customer-service dialogues with a simulated user and a verifiable goal.

    `user` is "scripted" (deterministic, free), a policy spec such as "hf:runs/tiny-model" or a
    policy object (an LLM user over it), or any `UserSimulator`. `user_admission` (a table of
    `gfcr.core.admission.AdmissionConfig`'s settings, e.g. `{"max_concurrency": 4}`) bounds the LLM
    user's calls at once over every env of the process; their queueing shows in `info["wait_s"]["user"]`.

    >>> env = DialogueEnv(domain="retail")
    >>> obs, info = env.reset(options={"task_id": "retail/108"})
    >>> obs
    'I want to return everything but a tablet in a recently delivered order. There is an E-Reader in ...'
    >>> arguments = {"first_name": "Yusuf", "last_name": "Gonzalez", "zip": "91455"}
    >>> env.step(Action("", (ToolCall("find_user_id_by_name_zip", arguments),)))[0]
    'yusuf_gonzalez_8900'
    >>> env.step("Thanks, I found your account. Which order is it?")[0]
    'I want to know how much money I can get back.'
    """

    signal_defaults: ClassVar[dict[str, float | bool]] = {
        "format_ok": False,
        "db_match": False,
        "communicated": False,
        "gold_actions_called": 0.0,
        "expects_change": False,
        "user_ended": False,
        "transferred": False,
        "user_gave_up": False,
        "stop_deferred": False,
        "simulator_failure": False,
    }

    def __init__(
        self,
        domain: str | Sequence[str] = ("airline", "retail"),
        split: str = "all",
        *,
        user: str | Any = "scripted",
        user_temperature: float = 0.0,
        user_cache: str | None = None,
        user_admission: AdmissionConfig | dict[str, Any] | None = None,
        max_stalls: int = 3,
        max_turns: int = 60,
        system_prompt: str | None = None,
        max_action_chars: int = DEFAULT_MAX_ACTION_CHARS,
        max_observation_chars: int = DEFAULT_MAX_OBSERVATION_CHARS,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        step_time_s: float = DEFAULT_STEP_TIME_S,
        render_mode: str | None = None,
        tasks: TaskSource | None = None,
    ) -> None:
        domains = [domain] if isinstance(domain, str) else list(domain)
        super().__init__(
            tasks if tasks is not None else task_source(domains, split),
            system_prompt=system_prompt,
            max_turns=max_turns,
            max_action_chars=max_action_chars,
            max_observation_chars=max_observation_chars,
            max_tool_calls=max_tool_calls,
            step_time_s=step_time_s,
            render_mode=render_mode,
        )
        admission = (
            from_dict(AdmissionConfig, user_admission, "user_admission")
            if isinstance(user_admission, dict)
            else user_admission
        )
        self.user = _make_user(
            user, max_stalls=max_stalls, temperature=user_temperature, cache=user_cache, admission=admission
        )
        self.db: Database | None = None

    # -- episode start ---------------------------------------------------------------------------

    def begin_episode(self, task: Task) -> None:
        """A fresh database and its tools, and the simulated user's opening of the call."""
        domain = load_domain(task.metadata["domain"])
        self.db = Database(domain.tables)
        toolkit = domain.toolkit(self.db)
        self.tools = {spec.name: spec for spec in toolkit.specs()}
        self._writes = frozenset(toolkit.writes)
        self._changed_since_user = self._transferred = False
        self._gold = gold_state(task)
        self._opening = self.user.start(task, int(self.np_random.integers(2**31)))
        self._flags: set[str] = set(self._opening.flags)
        self._failed_start = self._opening if self._opening.end is not None else None

    def render_prompt(self, task: Task) -> str:
        """The user's opening message."""
        return self._opening.text

    def system_prompt_for(self, task: Task) -> str | None:
        """The `system_prompt` the env was made with, else the domain's policy and how to act."""
        return self.system_prompt or SYSTEM_PROMPT.format(policy=load_domain(task.metadata["domain"]).policy)

    # -- steps -----------------------------------------------------------------------------------

    def respond(self, action: Action) -> Outcome:
        if self._failed_start is not None:  # the user simulator could not even open the call
            return self._finish(self._failed_start)
        if action.tool_calls:
            return self._limit(self._run_tools(action))
        assert self.task is not None and self.db is not None
        reached = self.db.same_state(self._gold.db)
        progress = Progress(
            goal_met=reached and not unsaid(self.task, self.messages),
            writes_pending=not reached,
            changed=self._changed_since_user,
            transferred=self._transferred,
        )
        turn = self.user.reply(self.messages, progress)
        self._changed_since_user = False
        self._flags |= turn.flags
        if turn.end is not None:
            return self._finish(turn)
        return self._limit(Outcome(turn.text, signals=self._signals(None)))

    def _run_tools(self, action: Action) -> Outcome:
        outcome = self.run_tools(action)
        for call, result in zip(action.tool_calls, outcome.messages or (), strict=False):
            if result.text.startswith(f"Error: {call.name} failed:"):  # a bug of the tool, not a refusal
                self._flags.add(TOOL_CRASHED)
            elif not result.text.startswith("Error:"):
                self._changed_since_user |= call.name in self._writes
                self._transferred |= call.name == "transfer_to_human_agents"
        return Outcome(outcome.observation, signals=self._signals(None), messages=outcome.messages)

    def _limit(self, outcome: Outcome) -> Outcome:
        """At the turn limit or past the step's budget (the base truncates the episode), report the
        judgement's signals too."""
        if self.turn < self.max_turns and not self.budget.exceeded:
            return outcome
        return Outcome(
            outcome.observation, signals=self._signals(self._judgement()), messages=outcome.messages
        )

    def _finish(self, turn: UserTurn) -> Outcome:
        judgement = self._judgement()
        counts = turn.end in ENDS_THAT_COUNT
        signals = {
            **self._signals(judgement),
            "user_ended": counts,
            "transferred": turn.end == "transfer",
            "user_gave_up": turn.end == "gave_up",
        }
        return Outcome(
            turn.text, reward=judgement.reward if counts else 0.0, terminated=True, signals=signals
        )

    def _judgement(self) -> ConversationJudgement:
        assert self.task is not None and self.db is not None
        return judge(self.task, self.db, self.messages)

    def _signals(self, judgement: ConversationJudgement | None) -> dict[str, float | bool]:
        signals: dict[str, float | bool] = {
            "format_ok": True,
            "stop_deferred": STOP_DEFERRED in self._flags,
            "simulator_failure": bool(self._flags & (FAILURE_FLAGS | {TOOL_CRASHED})),
        }
        if judgement is not None:
            signals.update(
                db_match=judgement.db_match,
                communicated=judgement.communicated,
                gold_actions_called=judgement.gold_actions_called,
                expects_change=self._gold.expects_change,
            )
        return signals

    @classmethod
    def oracle(cls, task: Task, messages: Sequence[Message]) -> str:
        return oracle_action(task, messages)


def _make_user(
    user: str | Any,
    *,
    max_stalls: int,
    temperature: float,
    cache: str | None,
    admission: AdmissionConfig | None,
) -> UserSimulator:
    if user == "scripted":
        return ScriptedUser(max_stalls=max_stalls)
    if isinstance(user, UserSimulator):
        return user
    if isinstance(user, str) and ":" not in user:
        raise ConfigError(
            f"user must be 'scripted', a policy spec such as 'hf:runs/tiny-model', a policy or a "
            f"UserSimulator; got {user!r}"
        )
    return LLMUser(user, temperature=temperature, cache_path=cache, admission=admission)
