"""The dialogue oracle: replay the gold actions, say the required information, let the user go.

It reads only the task and the conversation so far: it finds how many gold actions it has
already called, calls the next one, then tells the user every `communicate_info` string, then
(if the gold includes a transfer) says the policy's transfer sentence, and afterwards answers
politely until the user ends the call.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from gfcr.core import Message, Task, parse_action
from gfcr.envs.dialogue.evaluation import unsaid
from gfcr.envs.dialogue.users.simulator import agent_texts

TRANSFER_SENTENCE = "YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON."  # the policies' wording
CLOSING = "I understand. Is there anything else I can help you with today?"


def oracle_action(task: Task, messages: Sequence[Message]) -> str:
    """The oracle's next action for `task` after `messages`.

    >>> from gfcr.envs.dialogue.data import load_domain
    >>> task = load_domain("retail").task("retail/108")
    >>> oracle_action(task, [])
    '<tool_call>{"name": "return_delivered_order_items", "arguments": {...}}</tool_call>'
    >>> oracle_action(task, [Message("assistant", oracle_action(task, []))])  # then tells the refund
    'Here is the information you asked for: 346.93.'
    """
    messages = [_parsed(m) for m in messages]
    actions = task.gold["actions"]
    done = 0
    for message in messages:
        for call in message.tool_calls if message.role == "assistant" else ():
            if done < len(actions) and (call.name, call.arguments) == (
                actions[done]["name"],
                actions[done]["arguments"],
            ):
                done += 1
    if done < len(actions):
        return f"<tool_call>{json.dumps(actions[done])}</tool_call>"
    if missing := unsaid(task, messages):
        return f"Here is the information you asked for: {'; '.join(missing)}."
    transfers = any(action["name"] == "transfer_to_human_agents" for action in actions)
    if transfers and TRANSFER_SENTENCE not in agent_texts(messages):
        return TRANSFER_SENTENCE
    return CLOSING


def _parsed(message: Message) -> Message:
    """The message with the tool calls written in its text parsed, as the env reads them."""
    if message.role != "assistant" or message.tool_calls:
        return message
    return Message("assistant", message.text, parse_action(message.text)[0].tool_calls)
