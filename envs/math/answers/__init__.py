"""Answer checking: pull the final answer out of a reply, and decide whether it equals the gold one.

`extract.py` finds the last `\boxed{}`; `equivalence.py` is the entry point (`is_equivalent`),
checking in tiers from cheap to costly: canonical strings (`normalize.py`), exact numbers
(`numeric.py`, `arithmetic.py`), closed forms (`constants.py`), structures and intervals
(`structures.py`, `intervals.py`, `brackets.py`), then math-verify on LaTeX (`latex.py`) bounded
in time (`bounded.py`).
"""
