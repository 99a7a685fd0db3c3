"""Made-up people for the apps' tasks: names, addresses, e-mail addresses, phone numbers.

>>> import random
>>> person = random_person(random.Random(0))
>>> person == Person(**person.as_dict()), person.email.endswith("@example.com")
(True, True)
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass

FIRST = (
    "Ada",
    "Bruno",
    "Chioma",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Keiko",
    "Luis",
    "Maya",
    "Nikhil",
    "Olga",
    "Pedro",
    "Quinn",
    "Rosa",
    "Sven",
    "Tara",
)
LAST = (
    "Alvarez",
    "Brennan",
    "Chen",
    "Dubois",
    "Eriksen",
    "Fischer",
    "Garcia",
    "Haddad",
    "Ivanova",
    "Jensen",
    "Kowalski",
    "Larsen",
    "Moreau",
    "Nakamura",
    "Okafor",
    "Patel",
    "Rossi",
    "Silva",
    "Tanaka",
    "Weber",
)
STREETS = (
    "Elm Street",
    "Harbor Road",
    "Maple Avenue",
    "Mill Lane",
    "Oak Drive",
    "Station Road",
    "Willow Way",
)
CITIES = ("Springfield", "Riverton", "Lakeside", "Fairview", "Brookfield", "Georgetown", "Ashford")


@dataclass(frozen=True)
class Person:
    """A customer or guest: the fields the apps' forms ask for."""

    name: str
    street: str
    city: str
    postal: str
    email: str = ""
    phone: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def sentence(self) -> str:
        """The postal address as the tasks state it."""
        return f"{self.name}, {self.street}, {self.city} {self.postal}"


def random_person(rng: random.Random) -> Person:
    first, last = rng.choice(FIRST), rng.choice(LAST)
    return Person(
        name=f"{first} {last}",
        street=f"{rng.randint(1, 250)} {rng.choice(STREETS)}",
        city=rng.choice(CITIES),
        postal=f"{rng.randint(10000, 99999)}",
        email=f"{first.lower()}.{last.lower()}@example.com",
        phone=f"555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)}",
    )
