"""`python -m kafka_rebalance`, or this file run as a script (spark-submit .../kafka_rebalance/__main__.py)."""

import os
import sys

if not __package__:  # run as a script: its folder is sys.path[0] and would shadow top-level modules
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]

from kafka_rebalance.cli import main  # noqa: E402

sys.exit(main())
