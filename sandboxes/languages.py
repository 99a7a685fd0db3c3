"""The languages sandboxes run, and how: one `Language` per name; add one to support more.

A language is a command line with `{file}` where the program's source file goes. Python is
also marked `inline`: a warm worker runs it inside its already started interpreter instead of
starting a new one. `session` names the session driver ("python", "bash") or None.

>>> get_language("bash").command("main.sh")
['bash', '--norc', '--noprofile', 'main.sh']
>>> get_language("rust")
Traceback (most recent call last):
...
gfcr.errors.UnknownNameError: unknown language 'rust' Known: bash, python
"""

from __future__ import annotations

from dataclasses import dataclass

from gfcr.errors import UnknownNameError


@dataclass(frozen=True)
class Language:
    """How to run a program in one language: its file name and command line."""

    name: str
    filename: str
    argv: tuple[str, ...]
    inline: bool = False
    session: str | None = None

    def command(self, path: str, interpreter: str | None = None) -> list[str]:
        """The command line running the program at `path` (`interpreter` replaces argv[0])."""
        argv = [part.replace("{file}", path) for part in self.argv]
        return [interpreter or argv[0], *argv[1:]]


LANGUAGES: dict[str, Language] = {
    "python": Language("python", "main.py", ("python3", "-I", "{file}"), inline=True, session="python"),
    "bash": Language("bash", "main.sh", ("bash", "--norc", "--noprofile", "{file}"), session="bash"),
}


def get_language(name: str) -> Language:
    """The language called `name`; `UnknownNameError` listing the known ones otherwise."""
    if name not in LANGUAGES:
        raise UnknownNameError("language", name, LANGUAGES)
    return LANGUAGES[name]
