"""`Outages`: infrastructure failures counted per place, to stop sending work where it keeps failing.

A place is where an episode's env calls went, when it can be taken out of service (an env
server's url). A failed episode is held back, charged to its place: while the count is below
`limit` nobody can tell an outage from a few episodes' own bad luck. A success there releases
what it held (those failures were the episodes' own) and starts the count again; the `limit`-th
failure in a row puts the place out of service and hands back everything it held, to run again
elsewhere, as does every later failure there (episodes still in flight when it went out).

>>> outages = Outages(limit=2)
>>> outages.fail("http://a:1", "episode 1"), outages.succeed("http://a:1")  # a failure of its own
(None, ['episode 1'])
>>> outages.fail("http://a:1", "episode 2"), outages.fail("http://a:1", "episode 3")
(None, ['episode 2', 'episode 3'])
>>> outages.out, outages.fail("http://a:1", "episode 4")
({'http://a:1'}, ['episode 4'])
"""

from __future__ import annotations

from typing import Generic, TypeVar

from gfcr.errors import ConfigError

T = TypeVar("T")


class Outages(Generic[T]):
    """Failed work held per place until the place succeeds (release it) or fails `limit` in a row."""

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ConfigError(f"the limit of failures in a row must be >= 1, got {limit}")
        self.limit = limit
        self.held: dict[str, list[T]] = {}
        self.out: set[str] = set()  # places out of service

    def fail(self, place: str, work: T) -> list[T] | None:
        """Charge a failure to `place`: None while it holds the work; once `place` is out, the work
        to run elsewhere (all it held when this failure put it out)."""
        if place in self.out:
            return [work]
        held = self.held.setdefault(place, [])
        held.append(work)
        if len(held) < self.limit:
            return None
        self.out.add(place)
        return self.held.pop(place)

    def succeed(self, place: str) -> list[T]:
        """`place` did its work: the failures it held were the episodes' own; here they are."""
        return self.held.pop(place, [])

    def release(self) -> list[T]:
        """Everything held anywhere (nothing else is running that could tell an outage apart)."""
        work = [item for held in self.held.values() for item in held]
        self.held.clear()
        return work
