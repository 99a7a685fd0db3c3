"""Solvers of the pages browsed through pages, menus and trees: a contact book, a file tree, menus."""

from __future__ import annotations

import re

from gfcr.envs.browser.miniwob_oracle.base import click, quoted, solves
from gfcr.envs.browser.snapshot import PageView


@solves("phone-book")
def _phone_book(page: PageView) -> list[str]:
    """One contact a page: click the asked property of the person's card, else turn to the next page."""
    person, field = re.match(r"Find (.+) in the contact book and click on their (\w+)", page.goal).groups()  # type: ignore[union-attr]
    if page.find("heading", person) is None:
        return [click(page.find("link", ">"))]
    label = f"{field.title()}:"  # the card's rows read "Phone: 531-159-6223"
    row = next(node for node in page.find_all("generic") if node.all_text().startswith(label))
    return [click(row.children[-1])]


@solves("navigate-tree")
def _navigate_tree(page: PageView) -> list[str]:
    """Click the file or folder once it shows; until then open every closed folder."""
    name = quoted(page.goal)[0]
    shown = next((node for node in page.root.walk() if node.ref and name in (node.name, node.text)), None)
    if shown is not None:
        return [click(shown)]
    return [click(node) for node in page.find_all("button") if "expandable-hitarea" in node.name]
