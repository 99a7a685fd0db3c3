"""Solvers of the social-media and e-mail pages, whose icons are scripted elements with refs."""

from __future__ import annotations

from gfcr.envs.browser.miniwob_oracle.base import click, quoted, solves
from gfcr.envs.browser.snapshot import PageView


@solves("social-media")
def _social_media(page: PageView) -> list[str]:
    """Reply, retweet and like are icons of the user's post; the others are in its "more" menu."""
    user, action = page.goal.split()[3].rstrip(","), quoted(page.goal)[0]  # For the user @x, click on "Y"
    # the post: the innermost node holding the user's name and the post's buttons
    post = [node for node in page.root.walk() if user in node.all_text() and node.find("button", "more")][-1]
    icon = post.find("button", action.lower())
    if icon is not None:
        return [click(icon)]
    item = next((node for node in post.find_all("listitem") if node.all_text().startswith(action)), None)
    return [click(item)] if item is not None else [click(post.find("button", "more"))]
