"""Claims of paper 000 (sections 4-5, Tables 3-4) as hypotheses with tests and tolerances: ``evaluate(df)`` gives
one verdict per claim — reproduced / not reproduced / inconclusive / not run. Rules and tolerances: docs/claims.md.
"""
from analysis.claims.core import COLUMNS, MIN_REPS, VERDICTS
from analysis.claims.registry import FAMILIES, evaluate

__all__ = ["evaluate", "COLUMNS", "VERDICTS", "MIN_REPS", "FAMILIES"]
