"""Novelty of a proposed task: word n-gram Jaccard similarity against every task known."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gfcr.errors import ConfigError


def ngrams(text: str, n: int = 3) -> frozenset[tuple[str, ...]]:
    """The word n-grams of `text`, case and punctuation ignored (a text shorter than n words gives
    its whole word sequence as one gram).

    >>> sorted(ngrams("Add two numbers, a and b.", n=4))
    [('add', 'two', 'numbers', 'a'), ('numbers', 'a', 'and', 'b'), ('two', 'numbers', 'a', 'and')]
    """
    words = re.findall(r"\w+", text.lower())
    if len(words) < n:
        return frozenset([tuple(words)]) if words else frozenset()
    return frozenset(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets).

    >>> jaccard(frozenset({1, 2}), frozenset({2, 3}))
    0.3333333333333333
    """
    union = len(a | b)
    return len(a & b) / union if union else 0.0


class NoveltyFilter:
    """Known tasks' n-grams; a text is a duplicate when its Jaccard similarity to one of them reaches
    `max_similarity`.

    >>> known = NoveltyFilter(["Write a function that adds two numbers a and b."], max_similarity=0.5)
    >>> known.nearest("Write a function that adds two numbers a and b!")
    (1.0, 0)
    >>> known.is_novel("Count vowels."), known.is_novel("Write a function that adds two numbers")
    (True, False)
    """

    def __init__(self, texts: Iterable[str] = (), *, max_similarity: float = 0.6, n: int = 3) -> None:
        if not 0.0 < max_similarity <= 1.0 or n < 1:
            raise ConfigError(f"max_similarity must be in (0, 1] and n >= 1, got {max_similarity} and {n}")
        self.max_similarity, self.n = max_similarity, n
        self.known: list[frozenset[tuple[str, ...]]] = []
        for text in texts:
            self.add(text)

    def add(self, text: str) -> None:
        """Know `text` from now on."""
        self.known.append(ngrams(text, self.n))

    def nearest(self, text: str) -> tuple[float, int | None]:
        """The highest similarity of `text` to a known text, and that text's position (None: none known)."""
        grams = ngrams(text, self.n)
        scores = [jaccard(grams, known) for known in self.known]
        if not scores:
            return 0.0, None
        best = max(range(len(scores)), key=scores.__getitem__)
        return scores[best], best

    def is_novel(self, text: str) -> bool:
        return self.nearest(text)[0] < self.max_similarity
