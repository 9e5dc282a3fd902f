"""Consumer-group protocol state machines, offset semantics and __consumer_offsets codecs (pure)."""

from .. import native

# The classic group state machine is compiled with mypyc (setup.py): its fresh builds run, or else
# all its sources (never a stale build, never a mix). Registering reads nothing: the loader decides
# at the first import of one of these modules, so importing this package does no I/O.
CLASSIC_MODULES = ("classic_member", "classic_group_base", "classic_group_join", "classic_group")
native.compiled_together(__name__, CLASSIC_MODULES)


def __getattr__(name: str) -> bool:
    """`CLASSIC_COMPILED`: do the classic group's fresh builds run (else its sources)? Read on use
    (it looks the builds up), not at this package's import."""
    if name == "CLASSIC_COMPILED":
        return native.together_compiled(__name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
