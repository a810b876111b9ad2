"""`python -m aiworkbook.cli` == `aiworkbook`."""

from aiworkbook.cli import entry

entry()
