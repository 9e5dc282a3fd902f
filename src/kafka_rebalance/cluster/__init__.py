"""Cluster skew, preferred leader election, reassignment planning and execution batches (pure)."""
