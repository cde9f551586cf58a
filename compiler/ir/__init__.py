"""Layer 1: the System IR (devices, links, strategies), its graph and locality views, rank groups
and GPU figures."""
