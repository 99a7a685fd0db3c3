"""The skill library: reusable work extracted from successful trajectories.

- `Skill`: a tool-call procedure or a helper function, with provenance and success counts;
  `extract_tool_sequence` / `extract_functions` find them in trajectories.
- `SkillLibrary`: persisted through SQLAlchemy, retrieved by BM25 (embeddings optional), used
  as prompt guidance (`guidance`, a `gfcr.generate.Guide`) or as callable tools (`skill_tool`).

>>> from gfcr.skills import SkillLibrary
>>> SkillLibrary("sqlite://").guidance("anything")
''
"""

from gfcr.skills.library import Encoder, SkillConfig, SkillLibrary
from gfcr.skills.skill import KINDS, Skill, extract_functions, extract_tool_sequence
from gfcr.skills.tools import skill_tool

__all__ = [
    "KINDS",
    "Encoder",
    "Skill",
    "SkillConfig",
    "SkillLibrary",
    "extract_functions",
    "extract_tool_sequence",
    "skill_tool",
]
