"""Self-contained HTML report with plots."""
