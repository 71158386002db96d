"""The .iwt trace contract: the format's constants and layout (traceformat), the writer, the
reader (whole or block by block: tracereader, tracestream), the codec, the START/END schema and
the chunk census. numpy only: a saved trace is read and written without pandas, the probe or
the analysis (docs/trace-format.md)."""
