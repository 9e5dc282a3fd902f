"""PySpark jobs over telemetry: load model, offsets, lag, simulation sweeps."""
