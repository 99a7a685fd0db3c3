"""The tool-use family: `gfcr/ToolUse-v0`, a minimal look-up-then-answer task (the trainer's demo)."""

from gfcr.envs.tooluse.env import LOOKUP_CALL, ToolUseEnv, tooluse_tasks

__all__ = ["LOOKUP_CALL", "ToolUseEnv", "tooluse_tasks"]
