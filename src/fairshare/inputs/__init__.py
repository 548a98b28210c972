"""What is explained: the Input protocol (``base.py``) and one module per input kind (tables, frames, sparse tables,
texts, sequences, torch inputs), found in order by ``registry.py``."""
