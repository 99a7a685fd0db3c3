"""The skill library: reusable work extracted from successful trajectories.

- `Skill`: a tool-call procedure or a helper function, with provenance and success counts;
  `extract_tool_sequence` / `extract_functions` find them in trajectories.
- `extract_sql_queries` / `extract_patch`: fragments an env verified (SQL that executed, a
  patch that passed).
- `SkillLibrary`: persisted through SQLAlchemy, retrieved by BM25 (embeddings optional), used
  as prompt guidance (`guidance`, a `gfcr.generate.Guide`) or as callable tools (`skill_tool`).
- `SkillKeeper`: the library inside training (`[replay.skills]`, `SkillTrainingConfig`): each
  step's successful episodes extract, usage statistics, eviction by usefulness and staleness.

>>> from gfcr.skills import SkillLibrary
>>> SkillLibrary("sqlite://").guidance("anything")
''
"""

from gfcr.skills.fragments import extract_patch, extract_sql_queries
from gfcr.skills.library import Encoder, SkillConfig, SkillLibrary
from gfcr.skills.skill import KINDS, Skill, extract_functions, extract_tool_sequence
from gfcr.skills.tools import skill_tool
from gfcr.skills.training import SkillKeeper, SkillTrainingConfig

__all__ = [
    "KINDS",
    "Encoder",
    "Skill",
    "SkillConfig",
    "SkillKeeper",
    "SkillLibrary",
    "SkillTrainingConfig",
    "extract_functions",
    "extract_patch",
    "extract_sql_queries",
    "extract_tool_sequence",
    "skill_tool",
]
