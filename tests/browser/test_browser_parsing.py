"""Reading actions from model text and pages from observations: no browser needed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gfcr.envs.browser.actions import format_call, parse_calls
from gfcr.envs.browser.snapshot import PageView, parse_snapshot, render_page

SIGNATURES = {
    "click": ["ref"],
    "fill": ["ref", "text"],
    "scroll": ["dx", "dy"],
    "back": [],
    "noop": ["ms"],
}


def parse(text):
    calls, problems = parse_calls(text, SIGNATURES)
    return [(c.name, c.arguments) for c in calls], problems


def test_calls_are_found_after_reasoning_in_code_fences_and_with_keywords():
    text = (
        'The Submit button is e7, so:\n```\nfill(e6, \'Ada (the "first")\')\nclick(ref="e7")\n```\n'
        "then scroll(0, -200); back()"
    )
    assert parse(text) == (
        [
            ("fill", {"ref": "e6", "text": 'Ada (the "first")'}),
            ("click", {"ref": "e7"}),
            ("scroll", {"dx": 0, "dy": -200}),
            ("back", {}),
        ],
        [],
    )


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("click(e5, e6)", "click takes 1 argument (ref), got 2"),
        ("click(os.system('x'))", "is not a literal"),
        ("click(ref=e1, ref=e2)", "ref is given twice"),
        ("fill(e6, 'unclosed)", "not a valid call"),
        ("noop(**{'ms': 1})", "not a plain call"),
    ],
)
def test_malformed_calls_are_reported_not_run(text, problem):
    calls, problems = parse(text)
    assert calls == [] and len(problems) == 1 and problem in problems[0]


def test_words_that_only_look_like_actions_are_not_calls():
    assert parse("I will click the button, then go back (if needed). obj.click(e5)") == ([], [])


def test_format_call_round_trips_through_the_parser():
    text = format_call("fill", "e6", 'a "quoted" \\ line\nand ünïcode 中文')
    assert parse(text)[0] == [("fill", {"ref": "e6", "text": 'a "quoted" \\ line\nand ünïcode 中文'})]


@given(st.text(max_size=200))
def test_any_text_parses_without_raising(text):
    calls, problems = parse_calls(text, SIGNATURES)
    assert isinstance(calls, list) and isinstance(problems, list)


def test_snapshot_lines_with_quotes_colons_and_states_parse():
    snapshot = "\n".join(
        [
            "- generic [active] [ref=e1]:",
            '  - \'button "Say \\"hi\\": now" [ref=e2]\'',
            "  - 'link \"it''s #1\" [ref=f3e3] [cursor=pointer]':",
            "    - /url: /x",
            '  - paragraph [ref=e4]: "Price: $5"',
            '  - checkbox "Agree" [checked] [ref=e6]',
            '  - heading "Title" [level=1] [ref=e10]',
            "  - text: plain words",
        ]
    )
    root = parse_snapshot(snapshot)
    page = root.children[0]
    assert page.attrs == {"active": ""} and page.ref == "e1"
    assert [(n.role, n.name, n.ref) for n in page.children[:2]] == [
        ("button", 'Say "hi": now', "e2"),
        ("link", "it's #1", "f3e3"),
    ]
    assert root.find("paragraph").text == "Price: $5"
    assert root.find("checkbox", "Agree").attrs == {"checked": ""}
    assert root.find("heading").attrs == {"level": "1"}
    assert root.find("text").text == "plain words"


def test_page_view_reads_the_last_page_of_an_observation():
    first = render_page("Old goal", "/old", '- button "Old" [ref=e1]')
    latest = render_page("Buy a mug.", "/shop/cart?x=1", '- button "Checkout" [ref=e9]')
    view = PageView.parse(f'Instructions…\n\n{first}\nclick("e1"): Clicked e1.\n{latest}')
    assert (view.goal, view.path, view.find("button").name) == ("Buy a mug.", "/shop/cart?x=1", "Checkout")
