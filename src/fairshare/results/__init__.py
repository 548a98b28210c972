"""What comes back: the result objects (values, stderr, empty_value, player_names, info) and their HTML."""
