"""Where work runs besides this process: one protocol (``base.py``) for Dask clusters (held data, retried tasks,
bounded waits), Spark sessions and Ray; ``clients.py`` tells which a door's ``client=`` is."""
