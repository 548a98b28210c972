"""The core every folder builds on: errors and warnings, argument checks, the seed policy, numpy/torch arrays,
log-space combinatorics, compiled kernels' threads, the heap's settings, progress, and reading rows of tables."""
