"""`python -m aiworkbook` == `aiworkbook`."""

from aiworkbook.cli import entry

entry()
