"""The compiler, one subpackage per layer; each imports only the layers below it:

- ``base``: diagnostics and spans, units, limits, nominal figures;
- ``ir``: the System IR, its link graph and locality views, rank groups, GPU figures;
- ``training``: the mathematics of a transformer's training step (no topology);
- ``lang``: the front end (parse, resolve, elaborate, verify, fmt, parallel blocks) and the
  one pipeline every caller uses (``lang.pipeline``);
- ``collectives``: algorithms, orders, NCCL's tuning tables, paths, loads, the cost model,
  schedules, routing and replay;
- ``lint``: the rule catalogue and its configuration;
- ``analysis``: a strategy's step and the strategy search.

Training and collectives never import each other. tests/compiler/test_layering.py enforces it.
"""

# The stages that build a System's derived views register them with the IR here.
from .ir import graph, incidence, locality, summary  # noqa: F401
