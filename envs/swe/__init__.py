"""The software-engineering family: `gfcr/SWE-v0`, its tasks (generated from real projects, or
your own), the in-sandbox workspace and the verdict by the project's own tests."""

from gfcr.envs.swe.data import load_tasks, read_task_file, snapshot_of
from gfcr.envs.swe.env import SWEEnv
from gfcr.envs.swe.evaluation import Resolution, evaluate
from gfcr.envs.swe.generate import generate, project_tasks
from gfcr.envs.swe.projects import PROJECTS, Project, Snapshot
from gfcr.envs.swe.verifier import SWEVerifier
from gfcr.envs.swe.workspace import Workspace

__all__ = [
    "PROJECTS",
    "Project",
    "Resolution",
    "SWEEnv",
    "SWEVerifier",
    "Snapshot",
    "Workspace",
    "evaluate",
    "generate",
    "load_tasks",
    "project_tasks",
    "read_task_file",
    "snapshot_of",
]
