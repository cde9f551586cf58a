"""Layer 4: the lint rule catalogue, its configuration and suppressions."""
