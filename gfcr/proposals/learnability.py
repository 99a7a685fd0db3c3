"""The proposer's reward: how learnable its task is, from the solver's success on it."""

from __future__ import annotations

from gfcr.errors import ConfigError


def learnability(success: float, band: tuple[float, float] = (0.0, 1.0)) -> float:
    """Absolute Zero's proposer reward (Zhao et al. 2025, "Absolute Zero: Reinforced Self-play
    Reasoning with Zero Data", eq. 4): 1 − s for a task the solver solves at rate s, when s lies
    strictly inside the band; 0 outside it. With the default band (0, 1) a task the solver never or
    always solves teaches nothing and earns nothing, and the hardest task it still solves earns the
    most; a narrower band also zeroes tasks that are nearly always or nearly never solved.

    >>> [learnability(s) for s in (0.0, 0.25, 0.5, 1.0)]
    [0.0, 0.75, 0.5, 0.0]
    >>> learnability(0.9, band=(0.1, 0.8))
    0.0
    """
    low, high = band
    if not 0.0 <= low < high <= 1.0:
        raise ConfigError(f"the learnability band must satisfy 0 <= low < high <= 1, got {band}")
    if not 0.0 <= success <= 1.0:
        raise ConfigError(f"solver success is a rate in [0, 1], got {success}")
    return 1.0 - success if low < success < high else 0.0
