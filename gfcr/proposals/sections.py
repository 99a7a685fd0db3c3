"""A proposal as the proposer writes it: tagged sections, and why a proposal is rejected.

The proposer writes each part of its task between tags, `<prompt>…</prompt>`, `<solution>…</solution>`
and so on (the family names the tags it needs): plain text, no quoting rules to get wrong, and
code inside a section may itself hold a Markdown fence, which is dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gfcr.errors import GfcrError

# Why a proposal is not kept: it does not parse or verify by execution (invalid), it is too close
# to a task already known (duplicate), the solver always (trivial) or never (too_hard) solves it, or
# it solves it hardly more often than it guesses the answer with the question withheld (guessable).
REJECTIONS = ("invalid", "duplicate", "trivial", "too_hard", "guessable")

_FENCE = re.compile(r"^\s*```[\w+-]*\n(.*?)\n?```\s*$", re.DOTALL)


class Rejected(GfcrError):
    """A proposal that is not kept: `kind` is one of `REJECTIONS`, the message says why.

    >>> Rejected("invalid", "no <prompt> section").kind
    'invalid'
    """

    def __init__(self, kind: str, reason: str) -> None:
        if kind not in REJECTIONS:
            raise ValueError(f"rejection kind must be one of {REJECTIONS}, got {kind!r}")
        super().__init__(reason)
        self.kind, self.reason = kind, reason


def parse_sections(text: str, required: Sequence[str], optional: Sequence[str] = ()) -> dict[str, str]:
    """The sections `required` (and those of `optional` present) of a proposal's text, stripped,
    a Markdown fence around a section's whole content dropped; `Rejected("invalid")` names the first
    required section that is missing or empty. A tag written twice: its last section counts.

    >>> text = "<prompt>Add two numbers.</prompt>\\n<solution>```python\\nx = 1\\n```</solution>"
    >>> parse_sections(text, ["prompt", "solution"])
    {'prompt': 'Add two numbers.', 'solution': 'x = 1'}
    >>> parse_sections("<prompt>hi</prompt>", ["prompt", "tests"])
    Traceback (most recent call last):
    ...
    gfcr.proposals.sections.Rejected: no <tests>…</tests> section (or it is empty); write each part ...
    """
    found: dict[str, str] = {}
    for name in [*required, *optional]:
        matches = re.findall(rf"<{name}>(.*?)</{name}>", text, re.DOTALL)
        content = matches[-1].strip() if matches else ""
        fenced = _FENCE.match(content)
        content = fenced.group(1).strip() if fenced else content
        if content:
            found[name] = content
        elif name in required:
            raise Rejected(
                "invalid", f"no <{name}>…</{name}> section (or it is empty); write each part between its tags"
            )
    return found
