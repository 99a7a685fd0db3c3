"""Elements a page makes actionable without an ARIA role get one, so the snapshot gives them refs.

Playwright's accessibility snapshot lists an element by its role. Pages often make a plain `<span>`
or `<div>` clickable with a script (MiniWoB's links in `click-link`, the e-mail pages' star and
trash icons, the social-media pages' reply and like buttons): the element has no role, so the
snapshot folds its text into the parent's, or drops it, and the agent cannot name it. This module
finds such elements and gives each an explicit `role`, as BrowserGym gives every element a `bid`:

- `link` to a run of text inside other text (an inline element with only text in it), `button` to
  anything else (an icon, a box, a canvas, an SVG shape);
- the evidence that an element is actionable: a pointer, mouse or hover listener added with
  `addEventListener` (recorded by `LISTENERS`, an init script that runs before the page's own),
  an `onclick`-style handler, a `tabindex` of 0 or more, or a `cursor: pointer` that its parent
  does not have;
- only visible elements without a role of their own, neither inside nor holding a link, button or
  other control; block containers (an e-mail's row, a card) already show as `generic` with a ref,
  and keep their structure;
- an element with no text and no name of its own (an icon) is named by its `class` attribute
  when it has a short one (`button "trash"`), the one hint such pages give of what it does; the
  name follows the class as it changes (a starred e-mail's star). Drawings are not named so.

Elements that already have a role, and every other element, are left as they are, so the
observation grows only by the elements an agent could not name before.
"""

from __future__ import annotations

from typing import Any

# Runs in every document before its scripts (BrowserContext.add_init_script).
LISTENERS = """(() => {
  const kinds = new Set(
    ["click", "dblclick", "mousedown", "mouseup", "pointerdown", "pointerup", "contextmenu", "mouseenter",
     "mouseover"]);
  const listened = new WeakSet();
  const add = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, listener, options) {
    if (kinds.has(type) && this instanceof Element) listened.add(this);
    return add.call(this, type, listener, options);
  };
  Object.defineProperty(window, "__gfcrListened", { value: (element) => listened.has(element) });
})();"""

# Gives a role to each actionable element that has none; returns how many it gave.
REVEAL = """() => {
  const listened = window.__gfcrListened || (() => false);
  const drawings = new Set(
    ["CANVAS", "IMG", "rect", "circle", "ellipse", "polygon", "polyline", "path", "line", "image", "use"]);
  const plain = new Set(
    ["SPAN", "DIV", "I", "B", "EM", "STRONG", "SMALL", "FONT", "U", "S", "MARK", "text", ...drawings]);
  const control = "a[href], button, input, select, textarea, summary, label, [contenteditable], " +
    "[role=button], [role=link], [role=menuitem], [role=tab], [role=option], [role=checkbox], " +
    "[role=radio], [role=switch]";
  const handles = (e) => listened(e) || Boolean(e.onclick || e.onmousedown || e.onmouseup || e.ondblclick);
  const pointer = (e, style) => style.cursor === "pointer" &&
    !(e.parentElement && getComputedStyle(e.parentElement).cursor === "pointer");
  const hint = (e) => {
    const words = (e.getAttribute("class") || "").trim();
    return words.length <= 40 ? words : "";
  };
  let given = 0;
  for (const e of document.body ? document.body.querySelectorAll("*") : []) {
    if (!plain.has(e.tagName) || e.hasAttribute("role")) continue;
    const style = getComputedStyle(e), drawing = drawings.has(e.tagName);
    if (!(handles(e) || (e.hasAttribute("tabindex") && e.tabIndex >= 0) || pointer(e, style))) continue;
    // a block container (a row, a card) is shown already, with a ref: it keeps its structure
    if (e.childElementCount && !drawing && !style.display.startsWith("inline")) continue;
    if ((e.parentElement && e.parentElement.closest(control)) || e.querySelector(control)) continue;
    const box = e.getBoundingClientRect();
    if (!box.width || !box.height || !e.checkVisibility({ visibilityProperty: true })) continue;
    const text = !drawing && e.textContent.trim() !== "";
    e.setAttribute("role", text && !e.childElementCount && style.display === "inline" ? "link" : "button");
    e.setAttribute("data-gfcr-revealed", "");
    const named = e.getAttribute("aria-label") || e.getAttribute("title") || e.getAttribute("alt");
    if (!text && !named && !drawing && hint(e)) e.setAttribute("data-gfcr-named", "");
    given += 1;
  }
  for (const e of document.querySelectorAll("[data-gfcr-named]")) {  // a class may change: "star starred"
    if (e.getAttribute("aria-label") !== hint(e)) e.setAttribute("aria-label", hint(e));
  }
  return given;
}"""


async def reveal_actionable(page: Any) -> int:
    """Give a role to each actionable element of `page` that has none; how many were given."""
    return int(await page.evaluate(REVEAL))


async def revealed(element: Any) -> bool:
    """Whether the element a locator names (one that is on the page) got its role from `REVEAL`."""
    return bool(await element.evaluate("e => e.hasAttribute('data-gfcr-revealed')"))
