"""Several runs or several hosts as one: compare's changes and significance, the Parquet dataset, a run
over several hosts on one clock.
"""
