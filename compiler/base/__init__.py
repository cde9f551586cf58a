"""Layer 0: what every other layer uses: diagnostics and spans, units, limits, figures."""
