"""What comes back: one result base (``base.py``: values, stderr, empty_value, player_names, info, save/load, plot,
shap's names as read-only aliases), the results on it, how they are stored (``storage.py``) and their HTML."""
