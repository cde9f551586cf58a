"""The compiler pipeline, one module per stage: parse, resolve, elaborate, ranks, graph, verify."""

# The stages that build a System's derived views register them with the IR here.
from . import graph, locality  # noqa: F401
