"""What persists between runs: cache folders, the checksummed record log, content keys, resume."""
