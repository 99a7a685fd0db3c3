"""math-verify under a time bound: the last tier of ``is_equivalent``.

math-verify's timeouts use ``signal.alarm``, which works only in the main thread, and no signal
interrupts C-level big-integer arithmetic. So inputs that could explode (over ``_MAX_MV_CHARS``
characters, numeric power towers such as ``9^9^9``, huge exponents or factorials, deep nesting)
are rejected before math-verify sees them. In the main thread math-verify runs in-process with
its own timeouts: each of its calls (two parses, one verify) gets the time left, rounded up to
the whole seconds ``signal.alarm`` takes, so a check ends within ``timeout_s`` + 1 s.

math-verify reads ``i`` as a variable (only ``I`` becomes sympy's imaginary unit), so a free ``i`` in
its parse is replaced by ``sympy.I`` and sympy evaluates the constants: ``e^{i\\pi} = -1``,
``\\sqrt{-1} = i``, ``i^2 = -1``. A bound ``i`` (the index of ``\\sum_{i=1}^n``) stays a variable.

In any other thread it runs in a lazily started single-worker ``multiprocessing`` pool
(forkserver context; the worker runs math-verify in its own main thread, where its alarms work),
and the caller waits ``timeout_s`` + 1 s on ``AsyncResult.get``; on timeout the pool is terminated
and the next call starts a fresh one (under a lock). Checks from several threads queue for the
one worker, and the wait counts against each caller's budget. Starting the worker takes a second
or two, not charged to ``timeout_s``; like any multiprocessing user, a script that calls this from
threads needs an ``if __name__ == "__main__":`` guard (the worker imports the main module).
"""

from __future__ import annotations

import atexit
import logging
import math
import multiprocessing
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from gfcr.envs.math.answers.brackets import closing_bracket, nesting_depth, opening_bracket
from gfcr.envs.math.answers.latex import to_latex

if TYPE_CHECKING:
    from multiprocessing.pool import Pool

__all__ = ["WORKER", "Worker", "explosive", "verify_bounded"]

logger = logging.getLogger(__name__)

_MAX_MV_CHARS = 1_000  # math-verify (sympy) input cap
_MAX_NESTING = 12  # math-verify's parser slows by ~0.1 s per level of brackets
_MAX_GOLD_PARSES = 4096
_WORKER_STARTUP_S, _WORKER_RETRY_S = 30.0, 60.0
_WORKER_GRACE_S = 1.0  # the worker's alarms round up to whole seconds
_POWER_OP_RE = re.compile(r"\^|\*\*")
_TOKEN_RE = re.compile(r"\s*[+-]?[\w.]*")


def verify_bounded(pred: str, gold: str, deadline: float) -> bool:
    """math-verify's verdict on two normalised answers, False when it cannot finish by ``deadline``.

    >>> import time
    >>> deadline = time.monotonic() + 60  # the first call imports math-verify (sympy)
    >>> verify_bounded("x^2+2x+1", "(x+1)^2", deadline), verify_bounded("9^9^9", "1", deadline)
    (True, False)
    """
    timeout_s = deadline - time.monotonic()
    pred_latex, gold_latex = to_latex(pred), to_latex(gold)
    if timeout_s <= 0 or any(map(explosive, (pred, gold, pred_latex, gold_latex))):
        return False
    if threading.current_thread() is threading.main_thread():
        return _verify_in_process(pred_latex, gold_latex, timeout_s)
    return WORKER.verify(pred_latex, gold_latex, timeout_s)


_GOLD_PARSES: dict[str, list] = {}  # used by one thread only: the main one, here or in the worker


def _verify_in_process(pred_latex: str, gold_latex: str, timeout_s: float) -> bool:
    """math-verify with its own signal.alarm timeouts; main thread only (here or in the worker)."""
    import math_verify

    deadline = time.monotonic() + timeout_s

    def seconds_left() -> int:  # each call gets what is left; alarms take whole seconds, rounded up
        return math.ceil(deadline - time.monotonic())

    try:
        gold_parsed = _GOLD_PARSES.get(gold_latex) or _imaginary_unit(
            math_verify.parse(gold_latex, parsing_timeout=seconds_left())
        )
        if gold_parsed and len(_GOLD_PARSES) < _MAX_GOLD_PARSES:  # failures are not cached: maybe timeouts
            _GOLD_PARSES[gold_latex] = gold_parsed
        if not gold_parsed or seconds_left() <= 0:
            return False
        pred_parsed = _imaginary_unit(math_verify.parse(pred_latex, parsing_timeout=seconds_left()))
        if not pred_parsed or seconds_left() <= 0:
            return False
        return bool(math_verify.verify(gold_parsed, pred_parsed, timeout_seconds=seconds_left()))
    except Exception:  # in the worker, an error would otherwise cost a restart
        return False


def _imaginary_unit(parsed: list) -> list:
    """math-verify's parses with each free ``i`` read as the imaginary unit (see the module docstring).

    >>> import math_verify
    >>> _imaginary_unit(math_verify.parse("$e^{i\\\\pi}$"))[0], _imaginary_unit(math_verify.parse("$2i$"))[0]
    (-1, 2*I)
    """
    import sympy

    def with_unit(item: object) -> object:
        if not isinstance(item, sympy.Basic):
            return item
        units = {s: sympy.I for s in item.free_symbols if isinstance(s, sympy.Symbol) and s.name == "i"}
        return item.subs(units) if units else item

    return [with_unit(item) for item in parsed]


# ----------------------------------------------------------------------------- explosive input


def explosive(text: str) -> bool:
    """Input whose evaluation could run for minutes, partly inside C code that no alarm interrupts."""
    if len(text) > _MAX_MV_CHARS or nesting_depth(text) > _MAX_NESTING:
        return True
    if re.search(r"\d{5,}\s*!|!\s*[)}]*\s*!", text):
        return True  # 100000!, (9!)!: sympy evaluates numeric factorials eagerly
    for match in re.finditer(r"[)}]\s*!", text):
        group = text[opening_bracket(text[: match.start() + 1]) : match.start()]
        if _is_numeric(group) and re.search(r"[\^*!]|\d{5}", group):
            return True  # (10^6)!, but not (3)!
    for match in _POWER_OP_RE.finditer(text):
        exponent, end = _power_argument(text, match.end())
        tower = any(op in exponent for op in ("^", "**", "!")) or text[end:].lstrip().startswith(("^", "**"))
        if (tower and _is_numeric(exponent)) or re.search(r"\d{6,}", exponent):
            return True  # 9^9^9, 10**10**10, 2^{1000000}
    return False


def _is_numeric(text: str) -> bool:
    """No variables (LaTeX command names do not count): sympy would evaluate it to a number."""
    return not re.search(r"[A-Za-z]", re.sub(r"\\[A-Za-z]+", "", text))


def _power_argument(text: str, start: int) -> tuple[str, int]:
    """The exponent that starts at ``start`` (after ``^`` or ``**``) and the index where it ends."""
    start = len(text) - len(text[start:].lstrip())
    if text[start : start + 1] in ("{", "("):
        close = closing_bracket(text, start)
        end = len(text) if close < 0 else close + 1
        return text[start:end], end
    match = _TOKEN_RE.match(text, start)
    return match.group(), match.end()  # type: ignore[union-attr]  # the pattern also matches ""


# ----------------------------------------------------------------------------- the worker process


def _warm_up() -> bool:
    import math_verify

    return bool(math_verify.verify(math_verify.parse("$1$"), math_verify.parse("$1$")))


class Worker:
    """A single-process pool for non-main threads, replaced after a timeout (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: Pool | None = None
        self._failed_at = -_WORKER_RETRY_S

    def verify(self, pred_latex: str, gold_latex: str, timeout_s: float) -> bool:
        """math-verify in the worker; False on error or timeout."""
        return bool(self.run(_verify_in_process, (pred_latex, gold_latex, timeout_s), timeout_s))

    def run(self, function: Callable[..., object], args: tuple, timeout_s: float) -> object | None:
        """``function(*args)`` in the worker, or None when it fails or outlives ``timeout_s`` + grace."""
        pool = self._get_pool()
        if pool is None:
            return None
        try:
            return pool.apply_async(function, args).get(timeout_s + _WORKER_GRACE_S)
        except multiprocessing.TimeoutError:
            logger.warning("math-verify timed out after %.1f s; restarting its worker", timeout_s)
        except Exception:  # a dead worker or a closed pool: start afresh next time
            logger.warning("math-verify worker failed", exc_info=True)
        self._discard(pool)
        return None

    def _get_pool(self) -> Pool | None:
        with self._lock:
            if self._pool is None and time.monotonic() - self._failed_at > _WORKER_RETRY_S:
                pool = None
                try:  # forkserver: the worker forks from a clean server, not from this threaded process
                    context = multiprocessing.get_context("forkserver")
                    # Imported once in the server (if this starts it), so a replacement worker is quick.
                    context.set_forkserver_preload(["__main__", __name__, "math_verify"])
                    pool = context.Pool(processes=1)
                    pool.apply_async(_warm_up).get(_WORKER_STARTUP_S)  # imports, not charged to a check
                    self._pool = pool
                except Exception:  # e.g. a daemon process may not have children
                    logger.warning("cannot start the math-verify worker", exc_info=True)
                    self._failed_at = time.monotonic()
                    if pool is not None:
                        pool.terminate()
            return self._pool

    def _discard(self, pool: Pool) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None
        pool.terminate()

    def close(self) -> None:
        """Stop the worker (at interpreter exit: a pool left to the garbage collector then errs)."""
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.terminate()


WORKER = Worker()
atexit.register(WORKER.close)
