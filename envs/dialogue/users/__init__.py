"""Simulated users: the deterministic scripted user and the LLM user over any policy."""

from gfcr.envs.dialogue.users.base import Progress, UserSimulator, UserTurn
from gfcr.envs.dialogue.users.llm import LLMUser
from gfcr.envs.dialogue.users.scripted import ScriptedUser

__all__ = ["LLMUser", "Progress", "ScriptedUser", "UserSimulator", "UserTurn"]
