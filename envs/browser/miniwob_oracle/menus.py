"""Solvers of the pages browsed through pages, menus and trees: a contact book, a file tree, menus."""

from __future__ import annotations

import re

from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.miniwob_oracle.registry import click, quoted, ref, solves
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


@solves("click-menu")
def _click_menu(page: PageView) -> list[str]:
    """Select A>B>C: hover each item to open its submenu, then click the last."""
    items = [page.find("menuitem", name) for name in page.goal.removeprefix("Select ").split(">")]
    closed = next((i for i, item in enumerate(items) if item is None), len(items))  # the first not shown
    return [click(items[-1])] if closed == len(items) else [call("hover", ref(items[closed - 1]))]


@solves("click-menu-2")
def _click_menu_2(page: PageView) -> list[str]:
    """Open the menu, and its Playback submenu for a player's control, then click the label.

    Half the goals name the item only by an icon the goal's text does not carry; those stay undone.
    """
    label = quoted(page.goal)[1:]  # Click the "Menu" button, and then ... the item labeled "Save".
    if not label:
        raise LookupError("the goal names the item by an icon, which its text does not show")
    item = page.find("menuitem", label[0])
    if item is not None:
        return [click(item)]
    playback = page.find("menuitem", "Playback")
    return [call("hover", ref(playback))] if playback is not None else [click(page.find("button", "Menu"))]
