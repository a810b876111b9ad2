"""aiworkbook.widgets: the ipywidgets layer (the only package that imports ipywidgets).

Installed as `aiworkbook.widgets` from the top-level widgets/ folder; the dashboards issue fills it.
"""
