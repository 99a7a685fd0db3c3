"""`gfcr diagnose`: the rollout pathology index and the criteria report of a run.

Modules, one idea each: `data` (what is read: trajectory files, bench reports, training
out_dirs), `base` (a finding and its severity), `groups` (zero-variance groups, wasted compute),
`signals` (reward hacking, noisy signals), `length` (length inflation), `staleness` (stale
replay), `reverify` (re-judging with the env's verifier), `calibrate` (that verifier on each
task's gold and on junk), `criteria` (reliability, coverage, cost), `drift` (a run's generated
tasks over training, `[propose]`), `card` (the reproducibility
card, `comparable`), `diagnose` (all of it), `render` (terminal, JSON and HTML). See
docs/diagnose.md.
"""

from gfcr.apps.diagnose.card import card, comparable
from gfcr.apps.diagnose.criteria import criteria
from gfcr.apps.diagnose.data import RunData, load_run
from gfcr.apps.diagnose.diagnose import Diagnosis, diagnose
from gfcr.apps.diagnose.pathology import PATHOLOGIES, SEVERITIES, Pathology

__all__ = ["PATHOLOGIES", "SEVERITIES", "Diagnosis", "Pathology", "RunData", "card", "comparable", "criteria",
           "diagnose", "load_run"]  # fmt: skip
