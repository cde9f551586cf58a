"""Layer 2: the mathematics of a transformer training step: parameters, FLOPs, compute time,
memory and traffic per parallel dimension, with no topology in it."""
