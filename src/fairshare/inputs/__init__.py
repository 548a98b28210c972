"""What is explained: one module per input kind (tables, texts, sequences, ...) turning data into games."""
