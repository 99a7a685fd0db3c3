"""Scripted solvers of MiniWoB tasks that read only the observation: the goal and the page tree.

Each solver maps the latest page to the next actions, like an agent would: it parses the goal
("Enter "Keli" into the text field…"), finds the elements by role and name, and answers with
calls such as `fill("e6", "Keli")`. Multi-step tasks (searching, guessing, autocomplete) decide from
what the page shows now, so a solver needs no memory. `SOLVED_PAGES` lists the pages covered;
the tests check that each reaches reward 1.0.

>>> from gfcr.envs.browser.snapshot import render_page
>>> page = PageView.parse(render_page('Enter "Keli" into the text field and press Submit.', "/",
...     '- textbox [ref=e6]\\n- button "Submit" [ref=e7]'))
>>> next_actions("enter-text", page)
['fill("e6", "Keli")', 'click("e7")']
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.snapshot import Node, PageView

Solver = Callable[[PageView], list[str]]
SOLVERS: dict[str, Solver] = {}
ORDINAL = re.compile(r"(\d+)(?:st|nd|rd|th)")


def next_actions(page_name: str, page: PageView) -> list[str]:
    """The solver's next actions for MiniWoB page `page_name`; empty if it has no solver."""
    solver = SOLVERS.get(page_name)
    return solver(page) if solver else []


def solves(*pages: str) -> Callable[[Solver], Solver]:
    def register(solver: Solver) -> Solver:
        for page in pages:
            SOLVERS[page] = solver
        return solver

    return register


# -- helpers -------------------------------------------------------------------------------------


def quoted(goal: str) -> list[str]:
    """The double-quoted strings of the goal, in order."""
    return re.findall(r'"([^"]*)"', goal)


def ordinal(goal: str) -> int:
    """The first ordinal of the goal as an index: "the 3rd textbox" -> 2."""
    match = ORDINAL.search(goal)
    return int(match.group(1)) - 1 if match else 0


def ref(node: Node | None) -> str:
    if node is None or node.ref is None:
        raise LookupError("the element the solver needs is not on the page")
    return node.ref


def click(node: Node | None) -> str:
    return call("click", ref(node))


def fill(node: Node | None, text: str) -> str:
    return call("fill", ref(node), text)


def submit(page: PageView, name: str = "Submit") -> str:
    return click(page.find("button", name))


def listed(text: str) -> list[str]:
    """ "A, B and C" -> ["A", "B", "C"] ("nothing" -> [])."""
    text = text.strip()
    return [] if text == "nothing" else [part.strip() for part in re.split(r",| and ", text) if part.strip()]


def textboxes(page: PageView) -> list[Node]:
    return page.find_all("textbox")


# -- clicking ------------------------------------------------------------------------------------


@solves("click-test")
def _click_test(page: PageView) -> list[str]:
    return [click(page.find("button"))]


@solves("click-test-2")
def _click_test_2(page: PageView) -> list[str]:
    return [click(page.find("button", page.goal.split("button ")[1].rstrip(".")))]


@solves("click-button", "unicode-test")
def _click_button(page: PageView) -> list[str]:
    return [click(page.find("button", quoted(page.goal)[0]))]


@solves("click-button-sequence")
def _click_button_sequence(page: PageView) -> list[str]:
    return [click(page.find("button", "ONE")), click(page.find("button", "TWO"))]


@solves("click-dialog")
def _click_dialog(page: PageView) -> list[str]:
    return [click(page.find("button", "Close"))]


@solves("click-dialog-2")
def _click_dialog_2(page: PageView) -> list[str]:
    label = quoted(page.goal)[0]
    return [click(page.find("button", "Close" if label == "x" else label))]


@solves("click-tab")
def _click_tab(page: PageView) -> list[str]:
    number = re.search(r"Tab #(\d+)", page.goal)
    return [click(page.find("link", f"Tab #{number.group(1) if number else 1}"))]


@solves("click-collapsible", "click-collapsible-nodelay")
def _click_collapsible(page: PageView) -> list[str]:
    return [click(page.find("tab")), submit(page)]


@solves("focus-text")
def _focus_text(page: PageView) -> list[str]:
    return [click(page.find("textbox"))]


@solves("focus-text-2")
def _focus_text_2(page: PageView) -> list[str]:
    return [click(textboxes(page)[ordinal(page.goal)])]


@solves("click-checkboxes", "click-checkboxes-large", "click-checkboxes-transfer")
def _click_checkboxes(page: PageView) -> list[str]:
    wanted = listed(re.match(r"Select (.*) and click Submit", page.goal).group(1))  # type: ignore[union-attr]
    return [click(page.find("checkbox", name)) for name in wanted] + [submit(page)]


@solves("click-option")
def _click_option(page: PageView) -> list[str]:
    name = re.match(r"Select (.*) and click Submit", page.goal).group(1)  # type: ignore[union-attr]
    return [click(page.find("radio", name)), submit(page)]


@solves("odd-or-even")
def _odd_or_even(page: PageView) -> list[str]:
    actions = []
    for row in page.find_all("generic"):
        buttons = [child for child in row.children if child.role == "button"]
        numbers = [child.text for child in row.children if re.fullmatch(r"-?\d+", child.text)]
        if len(buttons) == 2 and numbers:
            actions.append(click(buttons[0] if int(numbers[0]) % 2 else buttons[1]))
    return [*actions, submit(page)]


@solves("generate-number")
def _generate_number(page: PageView) -> list[str]:
    shown = next((n.text for n in page.find_all("generic") if re.fullmatch(r"-|\d+", n.text)), "-")
    goal = page.goal
    if shown.isdigit():
        number = int(shown)
        bound = re.search(r"(less|greater) than (\d+)", goal)
        if bound:
            good = number < int(bound.group(2)) if bound.group(1) == "less" else number > int(bound.group(2))
        else:
            good = (number % 2 == 1) == ("odd" in goal)
        if good:
            return [submit(page)]
    return [click(page.find("button", "Generate"))]


@solves("guess-number")
def _guess_number(page: PageView) -> list[str]:
    feedback = re.search(
        r"The number is (higher|lower) than (\d+)", " ".join(n.all_text() for n in page.find_all("generic"))
    )
    guess = 5 if feedback is None else int(feedback.group(2)) + (1 if feedback.group(1) == "higher" else -1)
    return [fill(page.find("spinbutton"), str(guess)), submit(page)]


# -- typing --------------------------------------------------------------------------------------


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


# -- elements with refs only since scripted elements get roles (gfcr.envs.browser.actionable) ----


@solves("click-link")
def _click_link(page: PageView) -> list[str]:
    return [click(page.find("link", quoted(page.goal)[0]))]


@solves("click-tab-2", "click-tab-2-easy", "click-tab-2-medium", "click-tab-2-hard")
def _click_tab_2(page: PageView) -> list[str]:
    """The link is in one tab's panel: click it if the open panel has it, else open the next tab."""
    link = page.find("link", quoted(page.goal)[0])
    if link is not None:
        return [click(link)]
    tabs = page.find_all("tab")
    shown = next(i for i, tab in enumerate(tabs) if "selected" in tab.attrs)
    return [click(tabs[shown + 1].find("link"))]


@solves("drag-box")
def _drag_box(page: PageView) -> list[str]:
    small, large = ref(page.find("button", "s")), ref(page.find("button", "L"))
    return [call("drag_and_drop", small, large), submit(page)]


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


SOLVED_PAGES: tuple[str, ...] = tuple(sorted(SOLVERS))
