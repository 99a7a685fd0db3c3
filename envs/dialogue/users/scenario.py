"""A task's user scenario as the scripted user uses it: what to say first, facts, an agenda.

tau2-bench writes scenarios in the second person ("You want to cancel reservation EHGLP3.").
The scripted user speaks them in the first person (`first_person`) and sorts their sentences:
the reason for the call opens the conversation; the known facts (and what the user does not
know) answer the agent's questions, by topic; the task instructions form an agenda said one at a
time, without their conditions and stage directions ("If the agent refuses, mention that X" is
said as "X"); sentences about confirming are held back and said when the agent asks for
confirmation; sentences that only describe a persona ("You are polite but brief.") are not said.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# Topics a fact can be about, and how a sentence of the scenario shows it.
TOPICS: dict[str, re.Pattern[str]] = {
    "user id": re.compile(r"\buser ?id\b|\busername\b|\b[a-z]+_[a-z]+_\d{4}\b", re.I),
    "email": re.compile(r"\be-?mails?\b|@", re.I),
    "name": re.compile(r"\bname\b|\b(?:you are|i am) [A-Z][a-z]+\b"),
    "zip": re.compile(r"\bzip\b|\bzipcode\b|\bpostal\b|\b\d{5}\b", re.I),
    "address": re.compile(r"\baddress\b|\bliv(?:e|ing) in\b", re.I),
    "reservation": re.compile(r"\breservation\b|\b(?:confirmation|booking) (?:id|number|code)\b", re.I),
    "order": re.compile(r"\border (?:id|number)s?\b|#?W\d{7}\b", re.I),
    "payment": re.compile(r"\bpayment method\b|\bcredit card\b|\bgift card\b|\bpaypal\b", re.I),
}
# The phrases by which an agent asks for each topic.
ASKED: dict[str, re.Pattern[str]] = {
    "user id": re.compile(r"\buser ?id\b|\busername\b", re.I),
    "email": re.compile(r"\be-?mail", re.I),
    "name": re.compile(r"\b(?:your|full|first|last) name\b", re.I),
    "zip": re.compile(r"\bzip\b|\bzip ?code\b|\bpostal\b", re.I),
    "address": re.compile(r"\baddress\b", re.I),
    "reservation": re.compile(
        r"\breservation (?:id|number|code)s?\b|\bconfirmation (?:number|code)\b|\bwhich reservation", re.I
    ),
    "order": re.compile(r"\border (?:id|number)s?\b|\bwhich order", re.I),
    "payment": re.compile(r"\bpayment method\b|\bhow (?:would|will|do) you (?:like to )?pay\b", re.I),
}
_NAME_FACT = re.compile(r"\b(?:You are|Your name is|You name is|I am|My name is) [A-Z][a-z]+")
_ON_CONFIRMATION = re.compile(r"^(?:but |and |so )?(?:if|when|once|after)\b.*\bconfirm", re.I)
_CONDITION = re.compile(r"^(?:but |and |so )?(?:if|when|once|after|unless)\b[^,]*,\s*", re.I)
_INSTRUCTION = re.compile(
    r"^(?:then |also )?(?:mention|say|explain|insist|state|add|clarify|point out|tell (?:the agent|them))"
    r"(?: that)?\s+",
    re.I,
)
_PERSONA = re.compile(r"^(?:You are|You're|You like|You randomly|You speak|You talk)\b")
_NOT_PERSONA = re.compile(r"\d|\$|\bwant|\bwilling|\bonly\b|\bnot\b|n't\b|\bif\b|\bwhen\b", re.I)
# "you" after these words is an object ("told you" -> "told me"); elsewhere it is the subject.
_BEFORE_OBJECT = frozenset(
    "told tell tells telling ask asks asked give gives gave help helps helped to for with from offer offers "
    "let lets send sends sent call calls show shows remind reminds about at by of contact contacts provide "
    "provides inform informs allow allows notify notifies charge charges refund refunds transfer transfers "
    "assist assists approve approved compensate compensates than".split()
)
_CONTRACTIONS = {"you're": "I'm", "you've": "I've", "you'll": "I'll", "you'd": "I'd", "your": "my",
                 "yours": "mine", "yourself": "myself"}  # fmt: skip


def first_person(text: str) -> str:
    """Turn a second-person instruction into what the user says.

    >>> first_person("You want to cancel reservation EHGLP3. The agent told you that your trip is covered.")
    'I want to cancel reservation EHGLP3. The agent told me that my trip is covered.'
    >>> first_person("If you are told no, say you were promised a refund.")
    'If I am told no, say I was promised a refund.'
    """
    tokens = re.findall(r"[A-Za-z']+|[^A-Za-z']+", text)
    out: list[str] = []
    previous = ""  # the previous word, lower-cased; "" after punctuation
    for index, token in enumerate(tokens):
        if not token[0].isalpha():
            out.append(token)
            previous = "" if re.search(r"[.!?;:,(\n]", token) else previous
            continue
        lower = token.lower()
        following = tokens[index + 2].lower() if index + 2 < len(tokens) else ""
        if lower in _CONTRACTIONS:
            word = _CONTRACTIONS[lower]
        elif lower == "you" and following == "name":  # the data's typo "You name is ..."
            word = "my"
        elif lower == "you":
            word = "me" if previous in _BEFORE_OBJECT and following not in ("are", "were") else "I"
        elif lower in ("are", "were") and previous == "you" and out[-2] == "I":
            word = "am" if lower == "are" else "was"
        else:
            word = token
        if token[0].isupper() and word != "I":
            word = word[0].upper() + word[1:]
        out.append(word)
        previous = lower
    return "".join(out)


def spoken(sentence: str) -> str:
    """What the user says for an agenda sentence: its condition and stage directions dropped.

    >>> spoken("If Agent tells me that cancellation is not possible, mention that I was told otherwise.")
    'I was told otherwise.'
    >>> spoken("I don't want to cancel if I don't get a refund.")
    "I don't want to cancel if I don't get a refund."
    """
    said = _INSTRUCTION.sub("", _CONDITION.sub("", sentence, count=1), count=1)
    return said[0].upper() + said[1:] if said else sentence


def sentences(text: str | None) -> list[str]:
    """The sentences of `text` (split at . ! ? and blank lines), without empty ones.

    >>> sentences("You are Emma Kim.\\nYour user id is emma_kim_9957. If so,\\nsay so. .")
    ['You are Emma Kim.', 'Your user id is emma_kim_9957.', 'If so, say so.']
    """
    if not text:
        return []
    parts = re.split(r"(?<=[.!?])\s+|\n\s*\n", text.strip())
    return [" ".join(part.split()) for part in parts if re.search(r"[A-Za-z0-9]", part)]


def topics(text: str) -> frozenset[str]:
    """The topics a sentence of the scenario is about.

    >>> sorted(topics("You are Ana Li, your user id is ana_li_1234 and you live in 10001."))
    ['address', 'name', 'user id', 'zip']
    """
    found = {topic for topic, pattern in TOPICS.items() if pattern.search(text)}
    if _NAME_FACT.search(text):
        found.add("name")
    return frozenset(found)


def asked_topics(text: str) -> frozenset[str]:
    """The topics an agent's message asks about.

    >>> sorted(asked_topics("Could you give me your user id and the reservation number?"))
    ['reservation', 'user id']
    >>> sorted(asked_topics("Shall I cancel reservation EHGLP3?"))
    []
    """
    return frozenset(topic for topic, pattern in ASKED.items() if pattern.search(text))


@dataclass(frozen=True)
class Fact:
    """Something the user can say, and the topics it answers."""

    text: str
    topics: frozenset[str]


@dataclass(frozen=True)
class Scenario:
    """What the scripted user says: its opening, facts by topic, its agenda."""

    opening: str
    facts: tuple[Fact, ...]
    unknowns: tuple[Fact, ...]
    agenda: tuple[str, ...]
    on_confirm: tuple[str, ...]

    @classmethod
    def from_instructions(cls, instructions: Mapping[str, Any]) -> Scenario:
        """Sort tau2-bench's `user_scenario.instructions` into what the scripted user says.

        >>> s = Scenario.from_instructions({"reason_for_call": "You want to cancel order #W1234567.",
        ...     "known_info": "You are Ana Li in zip 10001.", "unknown_info": "You do not know your email.",
        ...     "task_instructions": "You are polite. If the agent asks you to confirm, say no."})
        >>> s.opening, s.facts[0].text, sorted(s.facts[0].topics)
        ('I want to cancel order #W1234567.', 'I am Ana Li in zip 10001.', ['name', 'zip'])
        >>> s.agenda, s.on_confirm
        ((), ('No.',))
        """
        reason = sentences(instructions.get("reason_for_call"))
        steps = [s for s in sentences(instructions.get("task_instructions")) if not _is_persona(s)]
        known = sentences(instructions.get("known_info")) + [
            s for s in reason if topics(s) & {"order", "reservation"}
        ]
        return cls(
            opening=" ".join(first_person(s) for s in reason if not _ON_CONFIRMATION.search(s)),
            facts=tuple(Fact(first_person(s), topics(s)) for s in known),
            unknowns=tuple(
                Fact(first_person(s), topics(s)) for s in sentences(instructions.get("unknown_info"))
            ),
            agenda=tuple(spoken(first_person(s)) for s in steps if not _ON_CONFIRMATION.search(s)),
            on_confirm=tuple(spoken(first_person(s)) for s in reason + steps if _ON_CONFIRMATION.search(s)),
        )


def _is_persona(sentence: str) -> bool:
    return bool(_PERSONA.search(sentence)) and not _NOT_PERSONA.search(sentence)
