"""aiworkbook.charts: pure Altair builders (data in, chart out; no Jupyter import)."""
