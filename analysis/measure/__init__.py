"""The active figures of the phases, the device view, the evidence the verdicts ask of the events, and
the passes that finish the whole report.
"""
