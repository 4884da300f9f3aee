"""``python -m bench``: every benchmark, as a small table (see bench/README.md)."""

from bench.run import main

raise SystemExit(main())
