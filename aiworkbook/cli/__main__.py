"""`python -m aiworkbook.cli` == `aiworkbook`."""

import sys

try:
    from aiworkbook.cli import entry
except KeyboardInterrupt:  # Ctrl-C while the command is still importing: nothing was done
    print("stopped by Ctrl-C while starting; nothing was done", file=sys.stderr)
    sys.exit(130)

entry()
