"""Replay: run a recorded trace's calls again, into a directory of the user's choosing.

    plan.py      the trace (read through the trace contract) into a plan: one list of calls per
                 recorded thread, the files they touch, the order kept across threads on a
                 shared file, the think time before each call
    paths.py     where each recorded file goes inside DIR, and the only code that creates
                 anything there (never through a symlink, never outside DIR)
    player.py    runs a plan: the process `iowitness replay` launches under the probe
    fio_iolog.py the same plan as fio iologs (version 3) and a job file that replays them

Layer: beside the analysis (it reads a saved trace, never the loader); commands/replay.py
does the recording with the collector, as `run` does.
"""
