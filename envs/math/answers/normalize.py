"""Canonical string forms of answers: the first tier of ``is_equivalent`` and every later tier's input.

``normalize`` drops what does not change an answer's meaning: ``$``, ``\\left``/``\\right``, spacing
commands, ``\\text{}`` wrappers, ``\\dfrac``, degree signs, units and count nouns after a number, a
leading ``x =``, remarks such as ``(i.e., ...)``, trailing periods; every way of saying "no
solutions" becomes ``∅``. ``gold_forms`` lists the forms a free-text gold answer accepts (the CHAMP
dataset: ``"C(10, 5), or equivalently 252"``, ``"The limit exists and is equal to X"``).
"""

from __future__ import annotations

import functools
import re

from gfcr.envs.math.answers.brackets import opening_bracket, split_top
from gfcr.envs.math.answers.extract import extract_boxed, matching_brace
from gfcr.envs.math.answers.numeric import parse_numbers

__all__ = ["ASSIGN_RE", "MAX_ANSWER_CHARS", "gold_forms", "normalize", "words"]

MAX_ANSWER_CHARS = 2_000  # after normalisation; longer is no final answer

_REPLACEMENTS = (
    ("\\$", ""), ("$", ""), ("\\displaystyle", ""), ("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"),
    ("{,}", ","), ("\\%", "%"), ("^{\\circ}", ""), ("^\\circ", ""), ("\\circ", ""), ("\\degree", ""),
    ("°", ""), ("\\!", ""), ("\\,", ""), ("\\;", " "), ("\\:", " "), ("\\qquad", " "), ("\\quad", " "),
    ("\\ ", " "), ("~", " "), ("−", "-"), ("∞", "\\infty"), ("+\\infty", "\\infty"), ("±", "\\pm "),
    ("\\(", ""), ("\\)", ""), ("\\[", ""), ("\\]", ""),
)  # fmt: skip
_SPECIAL_CHARS_RE = re.compile(r"[\\$^{°~−∞±]")
_LEFT_RIGHT_RE = re.compile(r"\\(?:left|right)(?:\.|(?![A-Za-z]))")
_TEXT_CMD_RE = re.compile(r"\\(?:text|textbf|textit|textrm|mathrm|mathbf|mbox|operatorname)\s*\{")
_SPACE_RE = re.compile(r"\s+")
# "x = 2", "x \in [0, 1]", "a_1 = 3": group 1 the name, group 2 the value.
ASSIGN_RE = re.compile(r"([A-Za-z]|\\[a-z]+)(?:_\{?\w+\}?)?\s*(?:=|\\in(?![a-z]))\s*(.+)", re.DOTALL)
_HEAD_WORDS_RE = re.compile(r"(\S+)\s+([A-Za-z][A-Za-z\s,.'-]*)")
_NOT_A_LABEL = frozenset("not no never except or and nor than more less least most but if".split())
_EMPTY_LATEX = frozenset(("\\emptyset", "\\varnothing", "∅", "\\{\\}", "{}"))
_EMPTY_WORDS_RE = re.compile(
    r"(?:there (?:are|is|exist|exists) )?no (?:[a-z-]+ ){0,3}(?:solutions?|values?|roots?|zeros?|"
    r"numbers?|pairs?|primes?|integers?|such [a-z]+)\b.*|none|empty set|the empty set"
)
_NUMBER_WORDS = {word: str(n) for n, word in enumerate("zero one two three four five six seven".split())}
_WORD_RE = re.compile(r"[a-z0-9]+")
_REMARK_START_RE = re.compile(r"i\.e\.|e\.g\.|[A-Za-z]{2,}\b")
_DIGIT_RE = re.compile(r"\d")
_LETTER_RE = re.compile(r"[A-Za-z]")


def normalize(text: str) -> str:
    """Canonical string form of one answer (either side).

    >>> normalize("$x = \\\\dfrac{1}{2}$."), normalize("5\\\\text{ cm}"), normalize("No real solutions")
    ('\\\\frac{1}{2}', '5', '∅')
    """
    if "\\boxed" in text or "\\fbox" in text:
        boxed = extract_boxed(text)
        text = text if boxed is None else boxed
    if len(text) > MAX_ANSWER_CHARS:
        return text
    if _SPECIAL_CHARS_RE.search(text):  # most answers have none: skip the LaTeX clean-up
        text = _LEFT_RIGHT_RE.sub("", text)
        for old, new in _REPLACEMENTS:
            if old in text:
                text = text.replace(old, new)
        text = _unwrap_text_commands(text)
    text = _SPACE_RE.sub(" ", text).strip().rstrip(".").strip()
    text = _strip_remark(text) if text.endswith(")") else text
    text = _strip_assignment(text) if "=" in text or "\\in" in text else text
    text = _strip_trailing_words(text) if " " in text else text
    maybe_empty_words = text[:1] in "NnTtE" and _EMPTY_WORDS_RE.fullmatch(words(text))
    if maybe_empty_words or text.replace(" ", "") in _EMPTY_LATEX:
        return "∅"  # "No integer solutions", "\emptyset", "none": all the empty set
    return text


@functools.lru_cache(maxsize=4096)
def gold_forms(gold: str) -> tuple[str, ...]:
    """Normalised forms a gold answer accepts (cached: a group of samples shares its gold).

    >>> gold_forms("C(10, 5), or equivalently 252")
    ('C(10, 5), or equivalently 252', 'C(10, 5)', '252')
    """
    forms = [gold]
    for part in re.split(r",\s*or\s+(?:equivalently|approximately|an equivalent form such as)\s+", gold):
        forms.append(part)
        if prefix := re.fullmatch(r"(?:the|it)\b[A-Za-z ,]*?\b(?:is equal to|equals|is)\s+(.+)", part, re.I):
            forms.append(prefix.group(1))  # "The limit exists and is equal to 2" -> "2"
        if leading := re.match(r"(yes|no)\s*[,.;:]", part, re.I):
            forms.append(leading.group(1))  # "Yes, and the sequence is ..." -> "Yes"
        if count := re.match(r"(?:at least|at most|exactly)\s+(\S+)", part, re.I):
            forms.append(_NUMBER_WORDS.get(count.group(1).lower(), count.group(1)))  # "Exactly one" -> "1"
    return tuple(dict.fromkeys(normalize(form) for form in forms))


def words(text: str) -> str:
    """Lower-case words without punctuation or articles.

    >>> words("The answer: Yes.")
    'answer yes'
    """
    return " ".join(w for w in _WORD_RE.findall(text.lower()) if w not in ("the", "a", "an"))


def _unwrap_text_commands(text: str) -> str:
    """``5\\text{cm}`` -> ``5 cm``: keep the words, drop the command (spaces keep words apart)."""
    while match := _TEXT_CMD_RE.search(text):
        close = matching_brace(text, match.end() - 1)
        if close < 0:
            return text
        text = f"{text[: match.start()]} {text[match.end() : close]} {text[close + 1 :]}"
    return text


def _strip_remark(text: str) -> str:
    """``100 (i.e., all values)`` -> ``100``: drop a trailing parenthesis of words.

    The parenthesis holds no digit unless it starts with "i.e."/"e.g.": ``5 (or 6)`` is a hedge.
    """
    start = opening_bracket(text)
    inner = text[start + 1 : -1].lstrip()
    start_word = _REMARK_START_RE.match(inner)
    is_remark = start_word and (start_word.group() in ("i.e.", "e.g.") or not _DIGIT_RE.search(inner))
    return text[:start].rstrip() if is_remark and start > 0 and text[start - 1] == " " else text


def _strip_assignment(text: str) -> str:
    """``x = 2`` -> ``2`` and ``x \\in [0, 1]`` -> ``[0, 1]``, for a single assignment only."""
    match = ASSIGN_RE.fullmatch(text)
    if match and "=" not in match.group(2) and len(split_top(match.group(2))) == 1:
        return match.group(2).strip()
    return text


def _strip_trailing_words(text: str) -> str:
    """``5 cm``, ``98 values``, ``0 is the only possible value`` -> the leading number (or letter)."""
    match = _HEAD_WORDS_RE.fullmatch(text)
    if not match:
        return text
    head, tail = match.group(1), words(match.group(2)).split()
    is_label = bool(tail) and (len(tail[0]) > 1 or tail[0] in ("m", "g", "s", "l"))
    is_label = is_label and not _NOT_A_LABEL.intersection(tail)  # "5 or more" is no "5"
    if is_label and (parse_numbers(head) or _LETTER_RE.fullmatch(head)):
        return head
    return text
