"""Solvers of the pages built on widgets: sliders, pie menus, accordions, multi-select lists, games."""

from __future__ import annotations

import calendar
import re

from gfcr.envs.browser.actions import MAX_CALLS
from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.miniwob_oracle.registry import click, fill, quoted, solves, submit
from gfcr.envs.browser.snapshot import Node, PageView


def _slide(page: PageView, wanted: list[int]) -> list[str]:
    """Set the page's jQuery UI sliders to `wanted` by keyboard, in page order, then submit.

    Tab focuses each handle in turn (a click on a small slider's handle moves it); ArrowUp and
    ArrowDown step a horizontal and a vertical slider alike. A message holds at most `MAX_CALLS`
    calls: when the steps need more, the message ends by clicking the goal text, which takes the
    focus off the handles, so that the next one starts again from the first.
    """
    keys = []
    for shown, number in zip(_slider_values(page), wanted, strict=True):
        steps = number - int(shown)
        keys += ["Tab"] + ["ArrowUp" if steps > 0 else "ArrowDown"] * abs(steps)
    last = submit(page) if len(keys) < MAX_CALLS else click(page.find("generic", text=page.goal))
    return [call("press", key) for key in keys[: MAX_CALLS - 1]] + [last]


def _slider_values(page: PageView) -> list[str]:
    """The value shown right after each slider's handle (a nameless button)."""
    values = []
    for parent in page.root.walk():
        for handle, value in zip(parent.children, parent.children[1:], strict=False):
            if handle.role == "button" and not handle.name and re.fullmatch(r"-?\d+", value.text):
                values.append(value.text)
    return values


@solves("use-slider")
def _use_slider(page: PageView) -> list[str]:
    wanted = int(re.search(r"Select (-?\d+)", page.goal).group(1))  # type: ignore[union-attr]
    return _slide(page, [wanted])


@solves("use-slider-2")
def _use_slider_2(page: PageView) -> list[str]:
    combination = re.search(r"\[([-\d,\s]+)\]", page.goal).group(1)  # type: ignore[union-attr]
    wanted = [int(number) for number in combination.split(",")]
    return _slide(page, wanted)


@solves("click-pie", "click-pie-nodelay")
def _click_pie(page: PageView) -> list[str]:
    """The wheel's spreader, labelled "+" while closed, opens it; then the labelled item is clickable."""
    label = quoted(page.goal)[0]
    wheel = page.get("img")
    spreader = [node for node in wheel.children if node.text in ("+", "-")][-1]
    item = wheel.find("generic", text=label)
    return [click(spreader), click(item)] if spreader.text == "+" else [click(item)]


@solves("click-collapsible-2", "click-collapsible-2-nodelay")
def _click_collapsible_2(page: PageView) -> list[str]:
    """Open the sections one after another until the link shows."""
    link = page.find("link", quoted(page.goal)[0])
    if link is not None:
        return [click(link)]
    tabs = page.find_all("tab")
    opened = [i for i, tab in enumerate(tabs) if "expanded" in tab.attrs]
    return [click(tabs[opened[-1] + 1 if opened else 0])]


@solves("click-scroll-list")
def _click_scroll_list(page: PageView) -> list[str]:
    """A click selects one option alone; Control+ArrowDown moves on without selecting, Control+Space adds."""
    names = re.match(r"Select (.*) from the scroll list", page.goal).group(1)  # type: ignore[union-attr]
    options = list(page.get("listbox").find_all("option"))
    # names may hold a comma themselves ("Korea, Republic of"): match each option against the list
    wanted = [i for i, node in enumerate(options) if re.search(rf"(^|, ){re.escape(node.name)}(, |$)", names)]
    actions = [click(options[wanted[0]])]
    for before, after in zip(wanted, wanted[1:], strict=False):
        actions += [call("press", "Control+ArrowDown")] * (after - before) + [call("press", "Control+Space")]
    return [*actions, submit(page)]


MONTHS = list(calendar.month_name)[1:]


def _pick_date(page: PageView, box: Node, date: str) -> list[str]:
    """Set `box` to `date` (mm/dd/yyyy) through its jQuery UI date picker; [] once it shows the date.

    Open the picker, step to the month with Prev/Next (one click a turn, as the calendar is drawn
    anew each time), then click the day.
    """
    if box.text == date:
        return []
    month, day, year = (int(part) for part in date.split("/"))
    titles = (node.text for node in page.find_all("generic") if re.fullmatch(r"[A-Z][a-z]+ \d{4}", node.text))
    shown = next(titles, None)
    if shown is None:
        return [click(box)]
    shown_name, shown_year = shown.split()
    months_ahead = (year - int(shown_year)) * 12 + month - 1 - MONTHS.index(shown_name)
    if months_ahead:
        return [click(page.find("generic", "Next" if months_ahead > 0 else "Prev"))]
    return [click(page.get("table").find("link", str(day)))]


@solves("choose-date", "choose-date-easy", "choose-date-medium", "choose-date-nodelay")
def _choose_date(page: PageView) -> list[str]:
    date = re.search(r"\d\d/\d\d/\d{4}", page.goal).group(0)  # type: ignore[union-attr]
    return _pick_date(page, page.get("textbox"), date) or [submit(page)]


def _pick_airport(page: PageView, box: Node, wanted: str) -> list[str]:
    """Type the goal's city or airport code into `box`, then click the suggestion that holds it."""
    if box.text.endswith(")") and wanted in box.text:
        return []
    if "active" in box.attrs:
        for item in page.find_all("listitem"):
            if wanted in item.all_text():
                return [click(item)]
        if box.text == wanted:
            return [call("noop", 500)]  # suggestions come after a delay
    return [fill(box, wanted)]


def _booking(trip: Node) -> Node | None:
    """The "Book (flight) for $N" button of a trip of a list of results."""
    return next(
        (child for child in trip.children if re.fullmatch(r"Book (flight )?for \$\d+", child.name)), None
    )


def _best_trip(page: PageView, wanted: str) -> Node | None:
    """The booking button of the trip the goal wants ("cheapest", "longest duration", ...), if trips show."""
    trips = [node for node in page.root.walk() if _booking(node) is not None]
    if not trips:
        return None

    def cost(trip: Node) -> int:
        if "cheap" in wanted or "expensive" in wanted:
            return int(_booking(trip).name.rsplit("$", 1)[1])  # type: ignore[union-attr]
        hours, minutes = re.search(r"Duration: (\d+)h (\d+)m", trip.all_text()).groups()  # type: ignore[union-attr]
        return int(hours) * 60 + int(minutes)

    pick = max if "expensive" in wanted or "longest" in wanted else min
    return _booking(pick(trips, key=cost))


@solves("buy-ticket")
def _buy_ticket(page: PageView) -> list[str]:
    return [click(_best_trip(page, page.goal))]


@solves("book-flight", "book-flight-nodelay")
def _book_flight(page: PageView) -> list[str]:
    """Fill the search (airports through their suggestions), then book the cheapest or shortest flight."""
    goal = re.search(r"the (\w+) one-way flight from: (.+) to: (.+) on (\S+)\.", page.goal)
    kind, origin, destination, date = goal.groups()  # type: ignore[union-attr]
    if booking := _best_trip(page, kind):
        return [click(booking)]
    for box, wanted in ((page.get("textbox", "From:"), origin), (page.get("textbox", "To:"), destination)):
        if actions := _pick_airport(page, box, wanted):
            return actions
    return _pick_date(page, page.find_all("textbox")[2], date) or [submit(page, "Search")]


@solves("order-food")
def _order_food(page: PageView) -> list[str]:
    """Add each named dish once, or the asked number of one dish of the asked kind (its icons' alt text)."""
    dishes = {}  # name -> (kinds, the "+" link)
    for node in page.root.walk():
        if len(node.children) != 2:
            continue
        description, order = node.children
        if add := next((child for child in order.children if child.name == "+"), None):
            kinds = {image.name for image in description.find_all("img")}
            dishes[description.children[0].text.strip()] = (kinds, add)
    if by_kind := re.match(r"Order (\d+) items that are (.+)", page.goal):
        kind = by_kind.group(2).strip()
        add = next(add for kinds, add in dishes.values() if kind in kinds)
        adds = [add] * int(by_kind.group(1))
    else:
        names = page.goal.split(":", 1)[1]
        adds = [
            add
            for name, (_, add) in dishes.items()
            if re.search(rf"(^|,)\s*{re.escape(name)}\s*(,|$)", names)
        ]
    return [*(click(add) for add in adds), submit(page, "Order!")]
