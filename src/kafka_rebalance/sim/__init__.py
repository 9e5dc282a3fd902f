"""Deterministic discrete-event simulator that drives group/ and assign/ over a virtual clock."""
