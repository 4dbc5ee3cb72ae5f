"""One status vocabulary for every solver in gnc_jax.

Each solution carries a :class:`Status` together with the number that decided it (a residual, a gap
or a change; see each solution type). The members mean exactly:

* ``optimal``: a certificate proves global optimality: the certified value attains a proven optimum
  (Theorem 3.3's closed forms, Rankin's bound) or a valid lower bound to within the stated tolerance.
* ``stationary``: first-order conditions hold to the stated tolerance: a (Riemannian) gradient norm
  below its tolerance, a fixed-point iteration's last change below its tolerance (the fixed-point
  equations hold to it), or, for the max-min problems, the linearised problem (the SLP's LP) admits
  no decrease. Not a proof of optimality.
* ``stalled``: the iteration stopped making progress (the score changed by less than the tolerance
  over the final phase, or the SLP trust region collapsed) without first-order conditions shown.
* ``max_steps``: a budget ended the iteration with the residual still above its tolerance: its
  iteration cap, or a ``time_limit`` or Ctrl-C (the status note then says which); for network
  training, which runs a fixed number of epochs and has no convergence test, the epoch budget
  ended it (residual NaN).
* ``nonfinite``: NaN or infinity in the result.
* ``failed``: an inner solver failed (e.g. the LP); the reason is kept beside the status.

The CSV store and JSON output write the lower-case names.
"""

from __future__ import annotations

import dataclasses
import enum


# How close a certified value must come to a proven optimum to be called ``optimal`` (in its own units:
# max cosine, or margin): the solutions' status and the search's stop at a proven optimum share it.
OPTIMAL_GAP = 1e-12


class Status(str, enum.Enum):
    """How a solve ended: one word, the same meaning for every solver (a string enum: compares equal
    to its value).

    Attributes:
      OPTIMAL: a certificate proves global optimality (the certified value attains a proven
        optimum, such as Theorem 3.3's closed forms, or a valid lower bound).
      STATIONARY: first-order conditions hold (a gradient norm, or the LP polish's predicted
        decrease, below its tolerance).
      STALLED: progress stopped without first-order conditions shown.
      MAX_STEPS: a budget ended it: the iteration cap, the work budget, or ``time_limit`` / Ctrl-C
        (named in ``status_note``).
      NONFINITE: a value turned NaN or inf.
      FAILED: an inner solver failed (``status_note`` says why).
    """

    OPTIMAL = "optimal"
    STATIONARY = "stationary"
    STALLED = "stalled"
    MAX_STEPS = "max_steps"
    NONFINITE = "nonfinite"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__


def from_residual(residual: float, tol: float) -> Status:
    """The status of an iteration that stops when ``residual`` (a gradient norm or a fixed-point
    change) is <= ``tol`` or at its step cap: nonfinite, stationary or max_steps."""
    residual = float(residual)
    if residual != residual or residual in (float("inf"), float("-inf")):
        return Status.NONFINITE
    return Status.STATIONARY if residual <= tol else Status.MAX_STEPS


@dataclasses.dataclass(frozen=True, kw_only=True)
class SolutionCore:
    """What every solution reports, whatever its family: the :class:`Status`, the residual or gap
    that decided it (its meaning is the family's: a gradient norm, an LP's predicted decrease, a
    fixed point's last change, the gap to a proven optimum), why an inner solver failed
    (``status_note``, '' otherwise), the restarts it took the best of (1 for a single run), and its
    wall time (compilation included, divided among the instances of its batched call)."""

    status: Status
    residual: float
    wall_s: float
    restarts: int = 1
    status_note: str = ""

    def core_summary(self) -> dict:
        return {
            "status": str(self.status),
            "residual": self.residual,
            "status_note": self.status_note,
            "restarts": self.restarts,
            "wall_s": self.wall_s,
        }
