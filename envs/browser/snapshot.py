"""The page as the agent reads it: observation text, and a parser of it for scripted solvers.

An observation shows the goal, the page's path and Playwright's AI-mode accessibility snapshot,
one element per line with its role, accessible name, state and a stable reference:

    Goal: Click the button.
    URL: /wob/miniwob/click-test.html
    Page:
    - generic [ref=e2]:
      - generic [ref=e3]: Click the button.
      - button "Click Me!" [ref=e5]

`render_page` writes that text and `PageView.parse` reads it back into `Node`s, which is how the
scripted oracles find the refs they click.

>>> view = PageView.parse(render_page("Click it.", "/t", '- generic [ref=e2]:\\n  - button "Go" [ref=e5]'))
>>> view.goal, view.path, view.find("button", "Go").ref
('Click it.', '/t', 'e5')
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

GOAL, URL, PAGE = "Goal: ", "URL: ", "Page:"
IN_THE_SCREENSHOT = f"{PAGE} the screenshot"  # in place of the snapshot, where only a picture shows the page
_KEY = re.compile(r'(?P<role>[^\s"\[]+)(?: "(?P<name>(?:[^"\\]|\\.)*)")?(?P<attrs>(?: \[[^\]]*\])*)')
_ATTR = re.compile(r"\[([^\]=]+)(?:=([^\]]*))?\]")


def render_page(goal: str, path: str, snapshot: str | None) -> str:
    """The observation text of a page: goal, path and accessibility snapshot; without a snapshot
    (a page shown only as a screenshot), a line that says so.

    >>> print(render_page("Click it.", "/t", None))
    Goal: Click it.
    URL: /t
    Page: the screenshot
    """
    if snapshot is None:
        return f"{GOAL}{goal}\n{URL}{path}\n{IN_THE_SCREENSHOT}"
    return f"{GOAL}{goal}\n{URL}{path}\n{PAGE}\n{snapshot}"


@dataclass
class Node:
    """One line of the snapshot: `role "name" [attrs] [ref=eN]: text`, with its child lines."""

    role: str
    name: str = ""
    ref: str | None = None
    text: str = ""
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)

    def walk(self) -> Iterator[Node]:
        """This node and every node below it, in page order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def all_text(self) -> str:
        """The names and texts of this node and its descendants, space-separated."""
        return " ".join(part for node in self.walk() for part in (node.name, node.text) if part)

    def find(self, role: str | None = None, name: str | None = None, text: str | None = None) -> Node | None:
        """The first node below (or at) this one with that role, exact name and/or exact text."""
        return next(self.find_all(role, name, text), None)

    def get(self, role: str | None = None, name: str | None = None, text: str | None = None) -> Node:
        """Like `find`, for a node that must be there: a missing one raises `LookupError`.

        >>> Node("root", children=[Node("button", "OK", "e1")]).get("button", "OK").ref
        'e1'
        """
        found = self.find(role, name, text)
        if found is None:
            wanted = " ".join(repr(part) for part in (role, name, text) if part is not None)
            raise LookupError(f"no node {wanted} on the page")
        return found

    def find_all(
        self, role: str | None = None, name: str | None = None, text: str | None = None
    ) -> Iterator[Node]:
        for node in self.walk():
            if (
                (role is None or node.role == role)
                and (name is None or node.name == name)
                and (text is None or node.text == text)
            ):
                yield node


@dataclass
class PageView:
    """An observation parsed back: the goal, the page's path, the snapshot as a tree (empty where
    only a screenshot showed the page), and whether the observation showed a screenshot."""

    goal: str
    path: str
    root: Node
    screenshot: bool = False

    @classmethod
    def parse(cls, observation: str, screenshot: bool = False) -> PageView:
        """Read the last page shown in `observation` (text before its `Goal:` line is ignored);
        `screenshot`: the observation showed it as a picture too."""
        start = observation.rfind("\n" + GOAL) + 1
        head, _, snapshot = observation[start:].partition("\n" + PAGE + "\n")
        lines = dict(line.split(": ", 1) for line in head.splitlines() if ": " in line)
        return cls(lines.get(GOAL[:-2], ""), lines.get(URL[:-2], ""), parse_snapshot(snapshot), screenshot)

    def find(self, role: str | None = None, name: str | None = None, text: str | None = None) -> Node | None:
        return self.root.find(role, name, text)

    def get(self, role: str | None = None, name: str | None = None, text: str | None = None) -> Node:
        return self.root.get(role, name, text)

    def find_all(
        self, role: str | None = None, name: str | None = None, text: str | None = None
    ) -> list[Node]:
        return list(self.root.find_all(role, name, text))


def parse_snapshot(text: str) -> Node:
    """Parse Playwright's AI-mode snapshot (YAML-like, two spaces per level) under a root node.

    >>> text = '- list [ref=e6]:\\n  - listitem [ref=e7]: "two: 2"\\n  - checkbox "A" [checked] [ref=e9]'
    >>> root = parse_snapshot(text)
    >>> [(n.role, n.name, n.ref, n.text, n.attrs) for n in root.children[0].children]
    [('listitem', '', 'e7', 'two: 2', {}), ('checkbox', 'A', 'e9', '', {'checked': ''})]
    """
    root = Node("root")
    stack: list[tuple[int, Node]] = [(-1, root)]
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        if not stripped.startswith("- "):
            continue
        depth = (len(line) - len(stripped)) // 2
        node = _parse_item(stripped[2:])
        while stack[-1][0] >= depth:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((depth, node))
    return root


def _parse_item(item: str) -> Node:
    key, value = _split_item(item)
    match = _KEY.fullmatch(key)
    if match is None:
        return Node("text", text=key)
    attrs = {name: value or "" for name, value in _ATTR.findall(match.group("attrs") or "")}
    ref = attrs.pop("ref", None)
    name = json.loads(f'"{match.group("name")}"') if match.group("name") is not None else ""
    return Node(match.group("role"), name, ref, _scalar(value), attrs)


def _split_item(item: str) -> tuple[str, str]:
    """`key: value` of one item; the key may be single-quoted YAML (`'a "b": c' [ref=e1]`)."""
    if item.startswith("'"):
        end = 1
        while True:
            end = item.index("'", end)
            if item[end + 1 : end + 2] != "'":
                break
            end += 2
        key, rest = item[1:end].replace("''", "'"), item[end + 1 :]
        return key, rest[2:] if rest.startswith(": ") else ""
    in_quotes, escaped = False, False
    for i, char in enumerate(item):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == '"':
            in_quotes = not in_quotes
        elif char == ":" and not in_quotes and item[i + 1 : i + 2] in (" ", ""):
            return item[:i], item[i + 2 :]
    return item, ""


def _scalar(value: str) -> str:
    if value.startswith('"'):
        try:
            return str(json.loads(value))
        except json.JSONDecodeError:
            return value
    if value.startswith("'") and value.endswith("'"):
        return value[1:-1].replace("''", "'")
    return value
