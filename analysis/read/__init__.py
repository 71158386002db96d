"""Reading a saved trace: the pandas view (run.py), what every trace shows (trace_view.py), the events
block by block, show's tables and lines, the output lines the benchmark printed.
"""
