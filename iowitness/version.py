"""The iowitness version: one place, read by the command line, the trace writer and the reports."""

__version__ = "0.1.0"
