"""Small HTML builders shared by the apps: a page frame, labelled fields, errors.

Fields always carry a `<label>`, so the accessibility snapshot names them ("textbox "City"").

>>> text_field("city", "City", "Springfield")
'<label for="city">City</label><input type="text" id="city" name="city" value="Springfield">'
>>> select_field("s", "Size", ["S", "M"], "M")
'<label for="s">Size</label><select id="s" name="s"><option>S</option><option selected>M</option></select>'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

from gfcr.envs.browser.policy import SCRIPT_NONCE

# The apps' one script: a form marked `data-confirm` asks `confirm()` before it is sent.
CONFIRM = (
    f'<script nonce="{SCRIPT_NONCE}">'
    'for (const form of document.querySelectorAll("form[data-confirm]")) form.addEventListener('
    '"submit", event => { if (!confirm(form.dataset.confirm)) event.preventDefault(); });</script>'
)


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def page(
    brand: str, title: str, body: str, links: Sequence[tuple[str, str]] = (), *, extra_header: str = ""
) -> str:
    """A complete page: header with the app's brand and links, then a `<main>` with a heading."""
    nav = "".join(f'<a href="{esc(href)}">{esc(text)}</a>' for text, href in links)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)} - {esc(brand)}</title>"
        '<link rel="stylesheet" href="/static/app.css"></head><body>'
        f'<header><span class="brand">{esc(brand)}</span>{nav}{extra_header}</header>'
        f"<main><h1>{esc(title)}</h1>{body}</main>{CONFIRM}</body></html>"
    )


def errors(messages: Iterable[str]) -> str:
    """Validation errors as an alert the snapshot shows (role=alert)."""
    items = "".join(f"<li>{esc(m)}</li>" for m in messages)
    return f'<div class="error" role="alert"><ul>{items}</ul></div>' if items else ""


def notice(message: str) -> str:
    return f'<p class="notice" role="status">{esc(message)}</p>' if message else ""


def text_field(name: str, label: str, value: str = "", kind: str = "text", **attributes: object) -> str:
    extra = "".join(f' {key.replace("_", "-")}="{esc(v)}"' for key, v in attributes.items())
    return (
        f'<label for="{name}">{esc(label)}</label>'
        f'<input type="{kind}" id="{name}" name="{name}" value="{esc(value)}"{extra}>'
    )


def textarea_field(name: str, label: str, value: str = "") -> str:
    return (
        f'<label for="{name}">{esc(label)}</label><textarea id="{name}" name="{name}">{esc(value)}</textarea>'
    )


def select_field(name: str, label: str, options: Sequence[str], selected: str = "") -> str:
    choices = "".join(f"<option{' selected' if o == selected else ''}>{esc(o)}</option>" for o in options)
    return f'<label for="{name}">{esc(label)}</label><select id="{name}" name="{name}">{choices}</select>'


def checkbox(name: str, label: str, checked: bool = False) -> str:
    mark = " checked" if checked else ""
    return (
        f'<p><input type="checkbox" id="{name}" name="{name}" value="yes"{mark}> '
        f'<label class="check" for="{name}">{esc(label)}</label></p>'
    )


def button_form(
    action: str, label: str, hidden: dict[str, object] | None = None, *, confirm: str = ""
) -> str:
    """A one-button POST form (for actions that change state: add, remove, delete …); with `confirm`,
    the page asks that question first (a `confirm()` dialog)."""
    fields = "".join(f'<input type="hidden" name="{k}" value="{esc(v)}">' for k, v in (hidden or {}).items())
    guard = f' data-confirm="{esc(confirm)}"' if confirm else ""
    form = f'<form class="inline" method="post" action="{esc(action)}"{guard}>'
    return f"{form}{fields}<button>{esc(label)}</button></form>"


def money(cents: int) -> str:
    """`1234` -> `$12.34`."""
    return f"${cents // 100}.{cents % 100:02d}"
