"""Where work runs besides this process: Dask clusters (held data, retried tasks, bounded waits)."""
