"""The benchmark's printed numbers against the trace: a claim (claim.py), placed on its phases and
judged (match_claims.py) by the verdict rules (verdict_rules.py); a trace's verdicts
(trace_verdicts.py).
"""
