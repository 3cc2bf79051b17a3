"""``python -m app`` is the ``oddsboost`` command."""

from app.cli import main

main()
