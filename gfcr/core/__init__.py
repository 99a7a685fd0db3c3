"""The contracts: rollout types, the policy protocol, the runner's hooks, and the verifier's verdict.

`gfcr.core` imports nothing of gfcr above it; everything else in gfcr speaks these types.

- the rollout: `Task`, `Message`, `ToolCall`, `ToolSpec`, `Action`, `Step`, `Trajectory` (with
  `TokenData`, `Cost`, `Provenance`), `Image` and JSONL I/O with its `ImageStore` (`messages.py`,
  `task.py`, `tools.py`, `trajectory.py`, `images.py`);
- the policy protocol: `Policy`, `TokenPolicy`, `AsyncPolicy`, `Request`, `SamplingParams`,
  `Completion` (`policy.py`), and `gfcr.core.chat.PolicyChat`, a policy as a cached chat function
  (not re-exported here: it asks the registry for policies, and the registry imports this package);
- what the runner plays and where the GFCR modules plug in: `EnvConfig`, `EpisodeSpec`
  (`episode.py`), `Controller`, `Decision`, `SignalReader`, `ReplaySink` (`hooks.py`);
- judging: the `Verifier` protocol and its `Verdict`, and `solved(reward)` with its threshold
  `SUCCESS_REWARD` (`verdict.py`).
"""

from gfcr.core.episode import EnvConfig, EpisodeSpec
from gfcr.core.hooks import Controller, Decision, ReplaySink, SignalReader
from gfcr.core.images import Image, ImageStore
from gfcr.core.messages import Action, Message, ToolCall
from gfcr.core.parsing import parse_action
from gfcr.core.policy import AsyncPolicy, Completion, Policy, Request, SamplingParams, TokenPolicy
from gfcr.core.task import Task
from gfcr.core.tools import ToolSpec
from gfcr.core.trajectory import Cost, Provenance, Step, TokenData, Trajectory, read_jsonl, write_jsonl
from gfcr.core.verdict import SUCCESS_REWARD, Verdict, Verifier, solved

__all__ = [
    "SUCCESS_REWARD",
    "Action",
    "AsyncPolicy",
    "Completion",
    "Controller",
    "Cost",
    "Decision",
    "EnvConfig",
    "EpisodeSpec",
    "Image",
    "ImageStore",
    "Message",
    "Policy",
    "Provenance",
    "ReplaySink",
    "Request",
    "SamplingParams",
    "SignalReader",
    "Step",
    "Task",
    "TokenData",
    "TokenPolicy",
    "ToolCall",
    "ToolSpec",
    "Trajectory",
    "Verdict",
    "Verifier",
    "parse_action",
    "solved",
    "read_jsonl",
    "write_jsonl",
]
