"""``python -m reinpatch_forecast.cli``: the ``reinpatch-forecast`` command."""

from . import main

raise SystemExit(main())
