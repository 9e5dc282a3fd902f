"""Consumer-group protocol state machines, offset semantics and __consumer_offsets codecs (pure)."""

from .. import native

# The classic group state machine and the KIP-848 group (its values, the heartbeat's state machine,
# the reconciliation, the target computation and the client member) are compiled with mypyc
# (setup.py) as one set: its fresh builds run, or else all its sources (never a stale build, never a
# mix: the KIP-848 modules read each other's native values directly, and the simulator's compiled
# world reads them too). Registering reads nothing: the loader decides at the first import of one of
# these modules, so importing this package does no I/O.
CLASSIC_MODULES = ("classic_member", "classic_group_base", "classic_group_join", "classic_group")
CONSUMER_MODULES = (
    "consumer_group_values",
    "consumer_group_model",
    "consumer_group_reconcile",
    "consumer_group_target",
    "consumer_group_tx",
    "consumer_group_steady",
    "consumer_group",
    "consumer_group_member",
)
COMPILED_MODULES = CLASSIC_MODULES + CONSUMER_MODULES
native.compiled_together(__name__, COMPILED_MODULES)


def __getattr__(name: str) -> bool:
    """`CLASSIC_COMPILED` (and its alias `CONSUMER_COMPILED`): do the group's fresh builds run (the
    classic and the KIP-848 modules, one set), else its sources? Read on use (it looks the builds
    up), not at this package's import."""
    if name in ("CLASSIC_COMPILED", "CONSUMER_COMPILED"):
        return native.together_compiled(__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
