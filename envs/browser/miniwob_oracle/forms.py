"""Solvers of the pages done by typing into forms: text, dates, answers read off the page, searches."""

from __future__ import annotations

import re

from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.miniwob_oracle.registry import (
    click,
    fill,
    ordinal,
    quoted,
    ref,
    solves,
    submit,
    textboxes,
)
from gfcr.envs.browser.snapshot import Node, PageView


@solves("enter-text", "enter-text-dynamic")
def _enter_text(page: PageView) -> list[str]:
    return [fill(page.find("textbox"), quoted(page.goal)[0]), submit(page)]


@solves("enter-text-2")
def _enter_text_2(page: PageView) -> list[str]:
    word = quoted(page.goal)[0]
    return [
        fill(page.find("textbox"), word.upper() if "upper case" in page.goal else word.lower()),
        submit(page),
    ]


@solves("enter-password")
def _enter_password(page: PageView) -> list[str]:
    password = quoted(page.goal)[0]
    return [fill(box, password) for box in textboxes(page)] + [submit(page)]


@solves("login-user")
def _login_user(page: PageView) -> list[str]:
    username, password = quoted(page.goal)[:2]
    first, second = textboxes(page)[:2]
    return [fill(first, username), fill(second, password), submit(page, "Login")]


@solves("enter-date")
def _enter_date(page: PageView) -> list[str]:
    month, day, year = re.search(r"(\d\d)/(\d\d)/(\d{4})", page.goal).groups()  # type: ignore[union-attr]
    return [fill(page.find("textbox"), f"{year}-{month}-{day}"), submit(page)]


@solves("enter-time")
def _enter_time(page: PageView) -> list[str]:
    hour, minute, half = re.search(r"(\d+):(\d\d) ?([AP]M)", page.goal).groups()  # type: ignore[union-attr]
    hours = int(hour) % 12 + (12 if half == "PM" else 0)
    return [fill(page.find("textbox"), f"{hours:02d}:{minute}"), submit(page)]


@solves("simple-arithmetic")
def _simple_arithmetic(page: PageView) -> list[str]:
    problem = next(n.text for n in page.find_all("generic") if n.text.endswith("="))
    a, op, b = re.match(r"(-?\d+) ([+\-x]) (-?\d+)", problem).groups()  # type: ignore[union-attr]
    value = {"+": int(a) + int(b), "-": int(a) - int(b), "x": int(a) * int(b)}[op]
    return [fill(page.find("textbox"), str(value)), submit(page)]


@solves("simple-algebra")
def _simple_algebra(page: PageView) -> list[str]:
    equation = next(n.text for n in page.find_all("generic") if "x" in n.text and "=" in n.text)
    if match := re.match(r"x ([+-]) (-?\d+) = (-?\d+)", equation):
        op, digit, total = match.groups()
        value = int(total) - int(digit) if op == "+" else int(total) + int(digit)
    else:
        digit, op, total = re.match(r"(-?\d+) ([+-]) x = (-?\d+)", equation).groups()  # type: ignore[union-attr]
        value = int(total) - int(digit) if op == "+" else int(digit) - int(total)
    return [fill(page.find("textbox"), str(value)), submit(page)]


@solves("find-word")
def _find_word(page: PageView) -> list[str]:
    words = page.find("paragraph").text.split()  # type: ignore[union-attr]
    word = re.sub(r"[^a-zA-Z]", "", words[ordinal(page.goal)])
    return [fill(page.find("textbox"), word), submit(page)]


@solves("read-table")
def _read_table(page: PageView) -> list[str]:
    label = re.match(r"Enter the value of (.*) into the text field", page.goal).group(1)  # type: ignore[union-attr]
    return [fill(page.find("textbox"), _table(page)[label]), submit(page)]


@solves("read-table-2")
def _read_table_2(page: PageView) -> list[str]:
    table, actions = _table(page), []
    for group in page.find_all("generic"):
        label = next((c.text.rstrip(":") for c in group.children if c.text.endswith(":")), None)
        box = next((c for c in group.children if c.role == "textbox"), None)
        if label in table and box is not None:
            actions.append(fill(box, table[label]))
    return [*actions, submit(page)]


def _table(page: PageView) -> dict[str, str]:
    rows = [[cell.name for cell in row.find_all("cell")] for row in page.find_all("row")]
    return {row[0]: row[1] for row in rows if len(row) == 2}


@solves("scroll-text")
def _scroll_text(page: PageView) -> list[str]:
    source, target = textboxes(page)[:2]
    return [fill(target, re.sub(r"[^a-zA-Z]", "", source.text.split()[-1])), submit(page)]


@solves("scroll-text-2")
def _scroll_text_2(page: PageView) -> list[str]:
    # The wheel scrolls what is under the pointer: clicking the text area first puts it there.
    down = "bottom" in page.goal
    return [click(page.find("textbox")), call("scroll", 0, 5000 if down else -5000), submit(page)]


@solves("use-spinner")
def _use_spinner(page: PageView) -> list[str]:
    value = re.search(r"Select (-?\d+)", page.goal).group(1)  # type: ignore[union-attr]
    return [fill(page.find("spinbutton"), value), submit(page)]


@solves("choose-list")
def _choose_list(page: PageView) -> list[str]:
    name = re.match(r"Select (.*) from the list", page.goal).group(1)  # type: ignore[union-attr]
    return [call("select", ref(page.find("combobox")), name), submit(page)]


@solves("form-sequence-2")
def _form_sequence_2(page: PageView) -> list[str]:
    radio = page.find_all("radio")[ordinal(page.goal)]
    number = quoted(page.goal)[0]
    box_index = ordinal(page.goal[page.goal.index("into") :])
    return [click(radio), fill(textboxes(page)[box_index], number), submit(page)]


@solves("multi-orderings", "multi-layouts")
def _movie_search(page: PageView) -> list[str]:
    genre, director, year = re.search(
        r"Search for (\w+) movies directed by (\w+) from year (\d+)", page.goal
    ).groups()  # type: ignore[union-attr]
    values = {"genre": genre, "director": director, "year": year, "date": year}
    actions = []
    for group in page.find_all():
        label = " ".join(
            c.name or c.text for c in group.children if c.role in ("rowheader", "generic", "text")
        )
        box = group.find("textbox")
        key = next((k for k in values if k in label.lower()), None)
        if key and box is not None and group.role in ("row", "generic") and len(group.children) <= 3:
            actions.append(fill(box, values[key]))
    button = next(n for n in page.find_all() if n.ref and (n.name or n.text) in ("Submit", "Search", "Go!"))
    return [*actions, click(button)]


@solves("use-autocomplete", "use-autocomplete-nodelay")
def _use_autocomplete(page: PageView) -> list[str]:
    start, end = (quoted(page.goal) + [""])[:2]
    box = page.find("textbox")
    typed = box.text if box is not None else ""
    if typed.startswith(start) and typed.endswith(end) and typed != start:
        return [submit(page)]
    choice = next(
        (
            item
            for item in page.find_all("listitem")
            if item.all_text().startswith(start) and item.all_text().endswith(end)
        ),
        None,
    )
    if choice is not None:
        return [click(choice)]
    return [call("noop", 500)] if typed == start else [fill(box, start)]  # suggestions come after a delay


@solves("search-engine")
def _search_engine(page: PageView) -> list[str]:
    term = quoted(page.goal)[0]
    index = ordinal(page.goal[page.goal.index("click") :])
    box = page.find("textbox")
    links = page.find_all("link")
    pages = [link for link in links if link.name.isdigit()]
    if box is None or box.text != term or not pages:
        return [fill(box, term), submit(page, "Search")]
    # The page links are the last ones clicked: the focused one is the page shown (1 after a search).
    shown = next((int(link.name) for link in pages if "active" in link.attrs), 1)
    wanted = index // 3 + 1
    if wanted != shown:
        return [click(next(link for link in pages if link.name == str(wanted)))]
    results = [link for link in links if link not in pages and link.name not in ("<", ">")]
    return [click(results[index % 3])]


@solves("sign-agreement")
def _sign_agreement(page: PageView) -> list[str]:
    """The name box and Agree open once the agreement is scrolled to its end (the wheel, over it)."""
    if page.goal == "Click the cancel button.":
        return [submit(page, "Cancel")]
    name, button = quoted(page.goal)
    box = page.find("textbox", "Name")
    if box is not None and "disabled" in box.attrs:
        return [call("hover", ref(page.find("textbox"))), call("scroll", 0, 10000)]
    return [fill(box, name), submit(page, button)]


@solves("login-user-popup")
def _login_user_popup(page: PageView) -> list[str]:
    """A pop-up may open when a box gets the focus: its Cancel closes it, its OK ends the episode."""
    if page.find("button", "Cancel") is not None:
        return [submit(page, "Cancel")]
    username, password = quoted(page.goal)[:2]
    first, second = textboxes(page)[:2]
    return [fill(first, username), fill(second, password), submit(page, "OK")]


@solves("copy-paste")
def _copy_paste(page: PageView) -> list[str]:
    """The text area is the box with text (it comes before or after the empty answer box)."""
    boxes = textboxes(page)
    source = next(box for box in boxes if box.text)
    target = next(box for box in boxes if not box.text)
    return [*_copied(source, target), submit(page)]


@solves("copy-paste-2")
def _copy_paste_2(page: PageView) -> list[str]:
    *areas, target = textboxes(page)
    return [*_copied(areas[ordinal(page.goal)], target), submit(page)]


def _copied(source: Node, target: Node) -> list[str]:
    """Copy and paste through the clipboard, as a person does: the text may end in a space."""
    keys = [call("press", f"ControlOrMeta+{key}") for key in "ac"]
    return [click(source), *keys, click(target), call("press", "ControlOrMeta+v")]


@solves("form-sequence")
def _form_sequence(page: PageView) -> list[str]:
    """The slider's handle takes keys: Home or End moves it to an end, then each arrow one step."""
    value = int(re.search(r"Select (-?\d+) with the slider", page.goal).group(1))  # type: ignore[union-attr]
    checkbox = page.find_all("checkbox")[ordinal(page.goal)]
    end, arrow, steps = ("Home", "ArrowRight", value + 10) if value <= 0 else ("End", "ArrowLeft", 10 - value)
    keys = [call("press", key) for key in [end] + [arrow] * steps]
    handle = page.find("button", "")  # the one button without a name
    return [click(handle), *keys, click(checkbox), submit(page)]


@solves("form-sequence-3")
def _form_sequence_3(page: PageView) -> list[str]:
    """The styled drop-down hides a plain <select>, which `select` sets."""
    height = re.match(r"Choose (.*) from the dropdown", page.goal).group(1)  # type: ignore[union-attr]
    return [call("select", ref(page.find("combobox")), height), submit(page, quoted(page.goal)[0])]


@solves("text-transform")
def _text_transform(page: PageView) -> list[str]:
    """The skewed captcha is one element per character."""
    captcha = next(
        node
        for node in page.find_all("generic")
        if node.children and all(len(letter.text) == 1 for letter in node.children)
    )
    return [fill(page.find("textbox"), "".join(letter.text for letter in captcha.children)), submit(page)]


@solves("terminal")
def _terminal(page: PageView) -> list[str]:
    """List the files with `ls`, then `rm` one with the goal's extension (or with none)."""
    lines = [node.text for node in page.find_all("generic")]
    if "user$ ls" not in lines:
        command = "ls"
    else:
        ending = re.search(r"extension (\.\S+)", page.goal)
        files = lines[lines.index("user$ ls") + 1].split()
        fitting = [file for file in files if (file.endswith(ending.group(1)) if ending else "." not in file)]
        command = "rm " + fitting[0]
    # keys go to the terminal's hidden input, which a click on the terminal focuses
    box = page.get("textbox")
    focus = [] if "active" in box.attrs else [click(page.get("generic", text="terminal"))]
    return [*focus, call("type", command), call("press", "Enter")]
