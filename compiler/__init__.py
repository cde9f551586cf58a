"""The compiler pipeline, one module per stage: parse, resolve, elaborate, ranks, graph, verify."""
