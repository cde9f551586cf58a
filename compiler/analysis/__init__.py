"""Layer 5: analyses over a compiled system: a strategy's step and the strategy search."""
