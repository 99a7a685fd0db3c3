"""The rollout types: what a task, a message, an action, a step and a trajectory are.

`gfcr.core` knows no env, policy or trainer; everything else in gfcr speaks these types.
"""

from gfcr.core.messages import Action, Message, ToolCall
from gfcr.core.parsing import parse_action
from gfcr.core.task import Task
from gfcr.core.tools import ToolSpec
from gfcr.core.trajectory import Cost, Provenance, Step, TokenData, Trajectory, read_jsonl, write_jsonl

__all__ = [
    "Action",
    "Cost",
    "Message",
    "Provenance",
    "Step",
    "Task",
    "TokenData",
    "ToolCall",
    "ToolSpec",
    "Trajectory",
    "read_jsonl",
    "parse_action",
    "write_jsonl",
]
