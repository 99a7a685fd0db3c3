"""Solvers of the social-media and e-mail pages, whose icons are scripted elements with refs."""

from __future__ import annotations

import re
from dataclasses import dataclass

from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.miniwob_oracle.registry import click, fill, quoted, solves, submit
from gfcr.envs.browser.snapshot import Node, PageView

# a capitalized word of the goal, perhaps a person's name ("Dee Dee" and "Ann-Marie" are one)
CAPITALIZED = re.compile(r"\b(?P<word>[A-Z][A-Za-z-]*)(?: (?P=word)\b)?")
NOT_NAMES = frozenset({"I", "Email", "Primary", "Mark", "Siri"})  # capitals of the goals' wording


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


@solves("social-media-all", "social-media-some")
def _social_media_all(page: PageView) -> list[str]:
    """Toggle the icon on all the user's posts, or on as many as the goal counts, then submit."""
    action = quoted(page.goal)[0].lower()  # Click the "Like" button on [3 posts | all posts] by @x and ...
    user = re.search(r" by (@\S+) and", page.goal).group(1)  # type: ignore[union-attr]
    posts = [
        post
        for post in page.find_all("generic")
        if post.children and post.children[0].text.endswith(f" {user}")
    ]
    count = re.search(r" on (\d+) posts?", page.goal)
    wanted = posts[: int(count.group(1))] if count else posts
    return [click(post.find("button", action)) for post in wanted] + [submit(page)]


@dataclass(frozen=True)
class EmailTask:
    """What an e-mail goal asks, read from its wording however it is phrased.

    `senders` are the goal's names, the likeliest sender first ("from X" or "by X", then "X's" or
    "X sent", then a bare name, then a sentence's capitalized first word, which may be just a verb);
    `recipient` is whom a forward goes to ("to X", else the name left).

    >>> EmailTask.parse("Forward Kim's e-mail to Dee Dee.")
    EmailTask(action='forward', senders=('Kim',), recipient='Dee Dee', message='')
    >>> EmailTask.parse("Lee wants the email you got from Star.")
    EmailTask(action='forward', senders=('Star',), recipient='Lee', message='')
    >>> EmailTask.parse('Tell Ana "Nisl amet" in an email.')
    EmailTask(action='reply', senders=('Ana', 'Tell'), recipient='', message='Nisl amet')
    """

    action: str  # "reply", "forward", "delete" or "star"
    senders: tuple[str, ...]
    recipient: str
    message: str

    @classmethod
    def parse(cls, goal: str) -> EmailTask:
        message = goal[goal.find('"') : goal.rfind('"')].strip('" ')
        words = re.sub(r'".*"', " ", goal)  # the goal less the reply's text
        names = _names(words)
        action = "reply" if message else _email_action(words, names)
        names.sort(key=lambda name: -name[1])  # stable: names of equal cue keep their order
        senders = [text for text, _ in names]
        recipient = ""
        if action == "forward" and len(names) > 1:
            recipient = next((text for text, cue in names if cue == 0), senders[-1])
            senders.remove(recipient)
        return cls(action, tuple(senders), recipient, message)


def _names(words: str) -> list[tuple[str, int]]:
    """The goal's names with their sender cue; a sentence's first word only where too few are left."""
    inside: list[tuple[str, int]] = []
    first: list[tuple[str, int]] = []
    for match in CAPITALIZED.finditer(words):
        before, after = words[: match.start()], words[match.end() :]
        if match.group() not in NOT_NAMES:
            starts_sentence = not before.strip() or re.search(r"[.!?]\s*$", before) is not None
            (first if starts_sentence else inside).append((match.group(), _sender_cue(before, after)))
    return inside + first if len(inside) < 2 else inside


def _sender_cue(before: str, after: str) -> int:
    """How surely a name is the sender: 3 for "from X" or "by X", 2 for "X's" or "X sent", 1 for a bare
    name, 0 for "to X" (a recipient)."""
    if re.search(r"\bto $", before):
        return 0
    if re.search(r"\b(?:from|by) $", before):
        return 3
    return 2 if re.match(r"'s\b| (?:sent|wrote|e-?mail|mail)\b", after) else 1


def _email_action(words: str, names: list[tuple[str, int]]) -> str:
    """Delete, star or (by default) forward; the names are blanked first, as "Star" is one."""
    plain = words
    for text, _ in names:
        plain = re.sub(rf"(?<=[\w,] ){re.escape(text)}\b", "", plain)  # a name inside a sentence
    plain = plain.lower()
    if re.search(r"delet|trash|rid of|remove|throw away|recycl|don't want|out of my inbox", plain):
        return "delete"
    return "star" if re.search(r"\b(?:im\w*t|star|flag|mark)\b", plain) else "forward"


@solves(
    "email-inbox",
    "email-inbox-delete",
    "email-inbox-forward",
    "email-inbox-forward-nl",
    "email-inbox-forward-nl-turk",
    "email-inbox-important",
    "email-inbox-nl-turk",
    "email-inbox-noscroll",
    "email-inbox-reply",
    "email-inbox-star-reply",
)
def _email_inbox(page: PageView) -> list[str]:
    """Inbox -> the sender's e-mail -> its reply or forward form; trash and star work from the inbox."""
    task = EmailTask.parse(page.goal)
    boxes = page.find_all("textbox")
    # a form's bar: back and send arrows, icons that show (and get a ref) once their images load
    send = [click(arrow) for arrow in page.find_all("button") if not arrow.name][1:2]
    if len(boxes) == 2:  # the forward form: "to" and the e-mail's text
        return [fill(boxes[0], task.recipient), *send]
    if len(boxes) == 1:  # the reply form
        return [fill(boxes[0], task.message), *send]
    if task.action in ("reply", "forward"):
        opened = page.find("button", task.action.title())  # an open e-mail's Reply or Forward
        return [click(opened or _thread(page, task))]
    icon = _thread(page, task).find("button", "trash" if task.action == "delete" else "star")
    return [click(icon)] if icon is not None else [call("noop", 200)]  # its image is still loading


def _thread(page: PageView, task: EmailTask) -> Node:
    """The inbox's e-mail from the task's sender: a clickable row of sender, subject and body, then icons."""
    threads = [
        node
        for node in page.root.walk()
        if node.attrs.get("cursor") == "pointer" and node.children and len(node.children[0].children) == 3
    ]
    senders = [thread.children[0].children[0].text for thread in threads]
    for name in task.senders:  # "Kim", or "Kims" or "AnswerKim" as the goal's wording glued it
        for thread, sender in zip(threads, senders, strict=True):
            if re.fullmatch(rf"(?:[A-Z][a-z]+)?{re.escape(sender)}s?", name):
                return thread
    # a name of two words ("Jo Ann") the goal's words split
    return next(thread for thread, sender in zip(threads, senders, strict=True) if sender in page.goal)
