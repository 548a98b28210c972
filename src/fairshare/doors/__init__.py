"""The user's doors: explain, estimate, exact, interactions, value_data, metrics; thin, checked before any call."""
