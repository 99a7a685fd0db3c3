"""The dialogue family's checker as a Filter `Verifier`: re-judge a saved `gfcr/Dialogue-v0` episode.

`DialogueVerifier.verify(task, trajectory)` reads the conversation the trajectory recorded, replays
the agent's tool calls on the task's initial database (`replay`, as the env ran them: calls of a
reply whose tool calls could not be parsed are not run) and judges the end state and what the
agent told the user with the env's own `judge` (tau2-bench's reward, see `evaluation`).

What the trajectory cannot re-derive is the simulated user's decision: the env pays the reward
only when the user ended the conversation (stopped or was transferred, `ENDS_THAT_COUNT`), and an
LLM user cannot be replayed offline. The verifier takes that fact from the `user_ended` signal
the env recorded on the last step; `require_user_end=False` judges the conversation alone (e.g.
a conversation logged elsewhere).

>>> from gfcr.core import Message, Step
>>> from gfcr.envs.dialogue.data import load_domain
>>> task = load_domain("retail").task("retail/108")  # return three items, say the refund
>>> calls = tuple(ToolCall(a["name"], a["arguments"]) for a in task.gold["actions"])
>>> messages = [Message("assistant", "", calls), Message("assistant", "You get 346.93 back.")]
>>> ended = Step("You get 346.93 back.", "Thanks! ###STOP###", 1.0, True, False, {"user_ended": True})
>>> verdict = DialogueVerifier().verify(task, Trajectory("gfcr/Dialogue-v0", task.id, "?", [ended], messages))
>>> verdict.reward, verdict.signals["db_match"]
(1.0, True)
>>> without_calls = Trajectory("gfcr/Dialogue-v0", task.id, "?", [ended], messages[1:])
>>> DialogueVerifier().verify(task, without_calls).reward  # the refund was said, never made
0.0
"""

from __future__ import annotations

from dataclasses import dataclass

from gfcr.core import Message, Task, ToolCall, Trajectory, Verdict, parse_action, solved
from gfcr.core.trajectory import Signals
from gfcr.envs.dialogue.evaluation import gold_state, judge, replay

NOTHING_SAID: Signals = {
    "db_match": False,
    "communicated": False,
    "gold_actions_called": 0.0,
    "expects_change": False,
    "user_ended": False,
}


@dataclass
class DialogueVerifier:
    """Reward 1.0 when the replayed database is the gold end state and the agent said every required
    piece of information (and the user ended the conversation), else 0.0 — as `gfcr/Dialogue-v0`.

    Signals: `db_match`, `communicated`, `gold_actions_called` (share of gold actions called, not
    scored), `expects_change`, and `user_ended` as the trajectory recorded it.
    """

    require_user_end: bool = True

    def verify(self, task: Task, trajectory: Trajectory) -> Verdict:
        messages, calls = conversation(trajectory)
        if not messages:
            return Verdict(0.0, False, dict(NOTHING_SAID))
        judgement = judge(task, replay(task, calls), messages)
        user_ended = trajectory.signals.get("user_ended") is True
        counts = user_ended or not self.require_user_end
        reward = judgement.reward if counts else 0.0
        signals: Signals = {
            "db_match": judgement.db_match,
            "communicated": judgement.communicated,
            "gold_actions_called": judgement.gold_actions_called,
            "expects_change": gold_state(task).expects_change,
            "user_ended": user_ended,
        }
        return Verdict(reward, solved(reward), signals)


def conversation(trajectory: Trajectory) -> tuple[list[Message], list[ToolCall]]:
    """The conversation as the env saw it, and the tool calls the env ran, in order.

    Tool calls written in a reply's text are parsed as the env parses them; a reply with a
    malformed call keeps the calls that parsed (as the env's own record does) but none of them
    ran. A trajectory without messages (steps only) gives its actions as the agent's replies.

    >>> from gfcr.core import Step
    >>> bad = '<tool_call>{"name": "calculate", "arguments": {"expression": "1+1"}}</tool_call><tool_call>{'
    >>> messages, calls = conversation(Trajectory("e", "t", "?", [Step(bad, "", 0.0, False, False)]))
    >>> [c.name for c in messages[0].tool_calls], calls
    (['calculate'], [])
    """
    recorded = trajectory.messages or [Message("assistant", step.action) for step in trajectory.steps]
    messages: list[Message] = []
    calls: list[ToolCall] = []
    for message in recorded:
        if message.role != "assistant":
            messages.append(message)
            continue
        text = message.text if isinstance(message.text, str) else ""
        if message.tool_calls:  # parsed natively by the policy's server: the env ran them as they are
            messages.append(message)
            calls += message.tool_calls
            continue
        parsed, errors = parse_action(text)
        messages.append(Message("assistant", text, parsed.tool_calls))
        if not errors:
            calls += parsed.tool_calls
    return messages, calls
