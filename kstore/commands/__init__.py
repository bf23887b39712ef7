"""What each CLI command does, one module per area; ``kstore.cli`` only parses and calls."""
