"""Events into phases: the per-call rules, the walk over the blocks, the phase table, groups of
concurrent phases, operations of several calls, requests in flight, percentiles.
"""
