"""Integer expressions over parameters and index variables, evaluated without recursion limits
being a risk (the parser caps their depth)."""

from __future__ import annotations

from collections.abc import Mapping

from . import syntax as s
from ..base.diagnostics import Diagnostic, error, suggest


class EvalError(Exception):
    """An expression could not be evaluated; carries the diagnostic to report."""

    def __init__(self, diagnostic: Diagnostic):
        super().__init__(diagnostic.message)
        self.diagnostic = diagnostic


def evaluate(expr: s.Expr, env: Mapping[str, int]) -> int:
    """The integer value of ``expr`` with names looked up in ``env`` (``/`` floors)."""
    if isinstance(expr, s.Num):
        return expr.value
    if isinstance(expr, s.Var):
        try:
            return env[expr.name]
        except KeyError:
            names = [n for n in env if not n.startswith("*")]
            raise EvalError(error("E114", f"unknown name '{expr.name}'" + suggest(expr.name, names),
                                  expr.span)) from None
    if isinstance(expr, s.Neg):
        return -evaluate(expr.operand, env)
    left, right = evaluate(expr.left, env), evaluate(expr.right, env)
    if expr.op == "+":
        return left + right
    if expr.op == "-":
        return left - right
    if expr.op == "*":
        value = left * right
        if abs(value) > 2**62:
            raise EvalError(error("E297", "value too large", expr.span))
        return value
    if right == 0:
        raise EvalError(error("E214", "division by zero", expr.span))
    return left // right if expr.op == "/" else left % right


def variables(expr: s.Expr) -> set[str]:
    """Every name an expression mentions."""
    if isinstance(expr, s.Var):
        return {expr.name}
    if isinstance(expr, s.Neg):
        return variables(expr.operand)
    if isinstance(expr, s.BinOp):
        return variables(expr.left) | variables(expr.right)
    return set()
