"""`booking`: a hotel's booking site — search dates, pick a room, a guest form with validation.

Tasks (`booking/<i>`, three kinds in turn): book a named room for given dates, guests and guest
details; book the cheapest room that is free and fits the party; state the total price of a stay
(an `answer`). Bookings are judged on the first one made — room, dates, party, breakfast and
guest details must all be right — against the server's state; answers against the price list.
"""

from __future__ import annotations

import random
import re
import zlib
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, ClassVar
from urllib.parse import urlencode

from gfcr.core import Task
from gfcr.envs.browser.actions import format_call as call
from gfcr.envs.browser.apps.app import App, Request, Response, SiteJudgement, not_found, redirect
from gfcr.envs.browser.apps.html import (
    checkbox,
    errors,
    esc,
    money,
    notice,
    page,
    select_field,
    text_field,
    textarea_field,
)
from gfcr.envs.browser.apps.people import random_person
from gfcr.envs.browser.snapshot import PageView

BRAND = "Harbor Hotel"
TODAY = date(2025, 6, 2)  # the hotel's calendar is fixed, so tasks mean the same on any day
BREAKFAST = 1500  # cents per guest per night
MAX_NIGHTS, MAX_GUESTS = 14, 6
DATE_LABEL = "Check-in date (YYYY-MM-DD)"
BREAKFAST_LABEL = f"Add breakfast ({money(BREAKFAST)} per guest per night)"
TERMS_LABEL = "I accept the cancellation policy"
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}")


@dataclass(frozen=True)
class Room:
    name: str
    sleeps: int
    price: int  # cents per night


ROOMS = (
    Room("Single Room", 1, 8900),
    Room("Twin Room", 2, 12400),
    Room("Double Room", 2, 12900),
    Room("Garden Suite", 3, 17900),
    Room("Family Suite", 4, 21500),
    Room("Penthouse", 6, 48000),
)
BY_NAME = {room.name: room for room in ROOMS}


@dataclass(frozen=True)
class Stay:
    room: str
    checkin: str  # YYYY-MM-DD
    nights: int
    guests: int

    def total(self, breakfast: bool) -> int:
        return self.nights * (BY_NAME[self.room].price + (BREAKFAST * self.guests if breakfast else 0))

    def query(self) -> str:
        return urlencode(
            {"room": self.room, "checkin": self.checkin, "nights": self.nights, "guests": self.guests}
        )


@dataclass(frozen=True)
class Booking:
    code: str
    stay: Stay
    breakfast: bool
    name: str
    email: str
    phone: str  # digits only


@dataclass
class BookingState:
    bookings: list[Booking] = field(default_factory=list)


def sold_out(room: Room, checkin: date, nights: int) -> bool:
    """Whether `room` is taken on any night of the stay (a fixed pattern, the same everywhere)."""
    days = (checkin + timedelta(days=i) for i in range(nights))
    return any(zlib.crc32(f"{room.name}|{day}".encode()) % 5 == 0 for day in days)


class BookingApp(App):
    """The hotel booking site; see the module docstring for its tasks."""

    name: ClassVar[str] = "booking"
    num_tasks: ClassVar[int] = 18

    # -- tasks -------------------------------------------------------------------------------------

    def task(self, index: int) -> Task:
        rng = random.Random(f"booking/{index}")
        kind = ("book", "cheapest", "total")[index % 3]
        while True:  # draw stays until one has a free room (a few draws at most)
            checkin = TODAY + timedelta(days=rng.randint(3, 150))
            nights, guests = rng.randint(1, 5), rng.randint(1, 4)
            free = [r for r in ROOMS if r.sleeps >= guests and not sold_out(r, checkin, nights)]
            if free:
                break
        room = min(free, key=lambda r: r.price) if kind == "cheapest" else rng.choice(free)
        breakfast = rng.random() < 0.5
        stay = Stay(room.name, checkin.isoformat(), nights, guests)
        party = f"{_count(guests, 'guest')}, checking in on {stay.checkin} for {_count(nights, 'night')}"
        meals = "with breakfast" if breakfast else "without breakfast"
        gold: dict[str, Any] = {"kind": kind, "stay": stay.__dict__, "breakfast": breakfast}
        if kind == "total":
            prompt = (
                f"What is the total price of the {room.name} for {party}, {meals}? "
                f'Answer with the amount in dollars, e.g. answer("$123.00").'
            )
            gold["answer"] = stay.total(breakfast)
        else:
            person = random_person(rng)
            which = f"the {room.name}" if kind == "book" else "the cheapest available room that fits everyone"
            prompt = (
                f"Book {which} for {party}, {meals}. The guest is {person.name}, "
                f"e-mail {person.email}, phone {person.phone}."
            )
            gold["person"] = person.as_dict()
        return Task(
            f"booking/{index}",
            prompt,
            gold,
            source="gfcr-apps/booking",
            metadata={"site": "booking", "start": "/booking/"},
        )

    def initial_state(self, task: Task) -> BookingState:
        return BookingState()

    # -- judge -------------------------------------------------------------------------------------

    def load_state(self, data: dict[str, Any]) -> BookingState:
        return BookingState([Booking(**{**b, "stay": Stay(**b["stay"])}) for b in data["bookings"]])

    def judge(self, task: Task, state: BookingState, answer: str | None) -> SiteJudgement:
        gold = task.gold
        if gold["kind"] == "total":
            if answer is None:
                return SiteJudgement()
            right = _cents(answer) == gold["answer"]
            return SiteJudgement(True, float(right), "right total" if right else f"wrong total {answer!r}")
        if not state.bookings:
            return SiteJudgement(answer is not None, 0.0, "no booking was made" if answer is not None else "")
        booking, person = state.bookings[0], gold["person"]
        checks = (
            ("room and dates", booking.stay == Stay(**gold["stay"])),
            ("breakfast", booking.breakfast == gold["breakfast"]),
            ("guest name", booking.name == person["name"]),
            ("e-mail", booking.email.lower() == person["email"]),
            ("phone", booking.phone == _digits(person["phone"])),
        )
        problems = [what for what, ok in checks if not ok]
        reason = (
            "the booking is right" if not problems else "the booking has the wrong " + ", ".join(problems)
        )
        return SiteJudgement(True, float(not problems), reason)

    # -- pages -------------------------------------------------------------------------------------

    def handle(self, state: BookingState, request: Request) -> Response:
        if request.path == "/":
            return _render("Find a room", _search_form(request))
        if request.path == "/rooms":
            return self._rooms(request)
        if request.path == "/details":
            return self._details(state, request)
        if match := re.fullmatch(r"/confirmation/(HB\d{4})", request.path):
            found = [b for b in state.bookings if b.code == match.group(1)]
            return _confirmation(found[0]) if found else not_found(f"There is no booking {match.group(1)}.")
        return not_found(f"There is no page at /booking{request.path}.")

    def _rooms(self, request: Request) -> Response:
        stay, problems = _read_stay(request, need_room=False)
        if stay is None:
            return _render("Find a room", errors(problems) + _search_form(request))
        checkin = date.fromisoformat(stay.checkin)
        cards = []
        for room in ROOMS:
            if room.sleeps < stay.guests:
                continue
            option = Stay(room.name, stay.checkin, stay.nights, stay.guests)
            if sold_out(room, checkin, stay.nights):
                action = "<p><strong>Sold out</strong> for these dates.</p>"
            else:
                link = f"/booking/details?{option.query()}"
                action = f'<p><a class="button" href="{esc(link)}">Book {esc(room.name)}</a></p>'
            cards.append(
                f'<article class="card" aria-label="{esc(room.name)}"><h2>{esc(room.name)}</h2>'
                f"<p>Sleeps {room.sleeps}. {money(room.price)} per night, "
                f"{money(option.total(False))} for {_count(stay.nights, 'night')}.</p>{action}</article>"
            )
        summary = f"<p>{stay.guests} guest(s), {stay.nights} night(s) from {stay.checkin}.</p>"
        return _render(
            "Available rooms", summary + "".join(cards) + '<p><a href="/booking/">Change search</a></p>'
        )

    def _details(self, state: BookingState, request: Request) -> Response:
        stay, problems = _read_stay(request, need_room=True)
        if stay is None:
            return _render("Find a room", errors(problems) + _search_form(request))
        fields = {key: request.value(key) for key in ("name", "email", "phone", "requests")}
        breakfast = request.value("breakfast") == "yes"
        if request.method == "POST":
            problems = _check_guest(fields, accepted=request.value("terms") == "yes")
            if not problems:
                code = f"HB{len(state.bookings) + 1:04d}"
                booking = Booking(
                    code, stay, breakfast, fields["name"], fields["email"], _digits(fields["phone"])
                )
                state.bookings.append(booking)
                return redirect(f"/booking/confirmation/{code}")
        hidden = "".join(
            f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in stay.__dict__.items()
        )
        body = (
            f"<p>{esc(stay.room)}: {stay.guests} guest(s), {stay.nights} night(s) from {stay.checkin}.</p>"
            + errors(problems)
            + f'<form method="post" action="/booking/details">{hidden}'
            + text_field("name", "Full name", fields["name"])
            + text_field("email", "E-mail", fields["email"])
            + text_field("phone", "Phone", fields["phone"])
            + checkbox("breakfast", BREAKFAST_LABEL, breakfast)
            + textarea_field("requests", "Special requests (optional)", fields["requests"])
            + checkbox("terms", TERMS_LABEL)
            + "<p><button>Confirm booking</button></p></form>"
        )
        return _render("Guest details", body)

    # -- oracle ------------------------------------------------------------------------------------

    def next_actions(self, task: Task, page: PageView) -> list[str]:
        gold, stay = task.gold, Stay(**task.gold["stay"])
        if page.path.startswith("/booking/details"):
            person = gold["person"]
            actions = [
                call("fill", page.get("textbox", label).ref, person[key])
                for key, label in (("name", "Full name"), ("email", "E-mail"), ("phone", "Phone"))
            ]
            for label, wanted in ((BREAKFAST_LABEL, gold["breakfast"]), (TERMS_LABEL, True)):
                box = page.get("checkbox", label)
                if ("checked" in box.attrs) != wanted:
                    actions.append(call("click", box.ref))
            return [*actions, call("click", page.get("button", "Confirm booking").ref)]
        if page.path.startswith("/booking/rooms") and page.find("alert") is None:
            if gold["kind"] == "total":  # the room's nightly price as the page shows it, plus breakfast
                card = page.find("article", stay.room)
                shown = re.search(r"(\$[\d,.]+) per night", card.all_text() if card else "")
                per_night = (_cents(shown.group(1)) or 0) if shown else 0
                per_night += BREAKFAST * stay.guests if gold["breakfast"] else 0
                return [call("answer", money(per_night * stay.nights))]
            return [call("click", page.get("link", f"Book {stay.room}").ref)]
        return [
            call("fill", page.get("textbox", DATE_LABEL).ref, stay.checkin),
            call("fill", page.get("spinbutton", "Nights").ref, str(stay.nights)),
            call("select", page.get("combobox", "Guests").ref, str(stay.guests)),
            call("click", page.get("button", "Search rooms").ref),
        ]


def _render(title: str, body: str) -> Response:
    return Response(page(BRAND, title, body, [("Search", "/booking/")]))


def _search_form(request: Request) -> str:
    return (
        '<form method="get" action="/booking/rooms">'
        + text_field("checkin", DATE_LABEL, request.value("checkin"))
        + text_field("nights", "Nights", request.value("nights", "1"), kind="number", min=1, max=MAX_NIGHTS)
        + select_field(
            "guests", "Guests", [str(n) for n in range(1, MAX_GUESTS + 1)], request.value("guests", "1")
        )
        + "<p><button>Search rooms</button></p></form>"
    )


def _read_stay(request: Request, need_room: bool) -> tuple[Stay | None, list[str]]:
    """The stay the request asks for, or the problems with it (as the page shows them)."""
    problems = []
    text = request.value("checkin")
    try:
        checkin = date.fromisoformat(text) if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text) else None
    except ValueError:
        checkin = None
    if checkin is None:
        problems.append(f"Check-in date must be a date written YYYY-MM-DD, got {text!r}.")
    elif not TODAY <= checkin <= TODAY + timedelta(days=365):
        problems.append(f"Check-in date must be between {TODAY} and {TODAY + timedelta(days=365)}.")
    nights, guests = request.value("nights"), request.value("guests")
    if not nights.isdigit() or not 1 <= int(nights) <= MAX_NIGHTS:
        problems.append(f"Nights must be a whole number from 1 to {MAX_NIGHTS}, got {nights!r}.")
    if not guests.isdigit() or not 1 <= int(guests) <= MAX_GUESTS:
        problems.append(f"Guests must be a number from 1 to {MAX_GUESTS}, got {guests!r}.")
    room = BY_NAME.get(request.value("room")) if need_room else None
    if need_room and room is None:
        problems.append("Choose a room first.")
    if problems or checkin is None:
        return None, problems
    stay = Stay(room.name if room else "", checkin.isoformat(), int(nights), int(guests))
    if room is not None and (room.sleeps < stay.guests or sold_out(room, checkin, stay.nights)):
        return None, [f"The {room.name} is not available for this stay."]
    return stay, []


def _check_guest(fields: dict[str, str], accepted: bool) -> list[str]:
    problems = []
    if not fields["name"]:
        problems.append("Full name is required.")
    if not _EMAIL.fullmatch(fields["email"]):
        problems.append(f"E-mail must look like name@example.com, got {fields['email']!r}.")
    if not 7 <= len(_digits(fields["phone"])) <= 15 or re.search(r"[^\d\s()+.-]", fields["phone"]):
        problems.append(f"Phone must have 7 to 15 digits, got {fields['phone']!r}.")
    if not accepted:
        problems.append("You must accept the cancellation policy.")
    return problems


def _confirmation(booking: Booking) -> Response:
    stay = booking.stay
    body = notice(f"Booking {booking.code} is confirmed.") + (
        f"<p>{esc(stay.room)} for {stay.guests} guest(s), {stay.nights} night(s) from {stay.checkin}"
        f"{', breakfast included' if booking.breakfast else ''}.</p>"
        f"<p>Guest: {esc(booking.name)}, {esc(booking.email)}.</p>"
        f"<p>Total: {money(stay.total(booking.breakfast))}</p>"
    )
    return _render(f"Booking {booking.code}", body)


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _cents(text: str) -> int | None:
    match = re.search(r"(\d[\d,]*)(?:\.(\d{1,2}))?", text)
    if match is None:
        return None
    return int(match.group(1).replace(",", "")) * 100 + int((match.group(2) or "0").ljust(2, "0"))


def _count(number: int, noun: str) -> str:
    """`2, "night"` -> "2 nights"."""
    return f"{number} {noun}{'s' * (number != 1)}"
