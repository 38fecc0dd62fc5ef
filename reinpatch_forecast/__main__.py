"""``python -m reinpatch_forecast``: the ``reinpatch-forecast`` command (see :mod:`.cli`)."""

from .cli import main

raise SystemExit(main())
