"""``python -m graphagent``: the same as the ``graphagent`` command."""

from graphagent.cli import main

raise SystemExit(main())
