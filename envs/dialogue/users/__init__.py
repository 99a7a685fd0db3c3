"""Simulated users: the deterministic scripted user and the LLM user over any policy."""

from gfcr.envs.dialogue.users.llm import LLMUser
from gfcr.envs.dialogue.users.scripted import ScriptedUser
from gfcr.envs.dialogue.users.simulator import Progress, UserSimulator, UserTurn

__all__ = ["LLMUser", "Progress", "ScriptedUser", "UserSimulator", "UserTurn"]
