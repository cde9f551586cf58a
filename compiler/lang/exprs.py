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


def expr_text(expr: s.Expr) -> str:
    """``expr`` as it would be written (fully parenthesised below the top), for messages."""
    if isinstance(expr, s.Num):
        return str(expr.value)
    if isinstance(expr, s.Var):
        return expr.name
    if isinstance(expr, s.Neg):
        return f"-{_operand(expr.operand)}"
    return f"{_operand(expr.left)} {expr.op} {_operand(expr.right)}"


def _operand(expr: s.Expr) -> str:
    return expr_text(expr) if isinstance(expr, (s.Num, s.Var)) else f"({expr_text(expr)})"


_COMPARE = {"<=": int.__le__, "<": int.__lt__, ">=": int.__ge__, ">": int.__gt__,
            "==": int.__eq__, "!=": int.__ne__}


def check_requirement(req: s.Require, env: Mapping[str, int]) -> None:
    """Raise E223 at ``req`` when its comparison does not hold with ``env`` bound: the
    condition as written, its values, and the file's reason."""
    left, right = evaluate(req.left, env), evaluate(req.right, env)
    if _COMPARE[req.op](left, right):
        return
    text = f"{expr_text(req.left)} {req.op} {expr_text(req.right)}"
    why = f": {req.message}" if req.message else ""
    raise EvalError(error("E223", f"requirement not met: {text} ({left:,} {req.op} {right:,} "
                          f"is false){why}", req.span))


def variables(expr: s.Expr) -> set[str]:
    """Every name an expression mentions."""
    if isinstance(expr, s.Var):
        return {expr.name}
    if isinstance(expr, s.Neg):
        return variables(expr.operand)
    if isinstance(expr, s.BinOp):
        return variables(expr.left) | variables(expr.right)
    return set()


class _TooLarge(Exception):
    """A product beyond ``evaluate``'s bound: ``evaluate`` says so with its diagnostic."""


def _mul(a: int, b: int) -> int:
    value = a * b
    if abs(value) > 2**62:
        raise _TooLarge
    return value


#: Compiled expressions by ``id``, each beside the expression it was made from (so an id
#: reused by another object is never mistaken for it); cleared when it grows past the bound.
_COMPILED: dict[int, tuple[s.Expr, object]] = {}
_COMPILED_MAX = 4096


def _source(expr: s.Expr, depth: int = 0) -> str | None:
    """Python source computing ``expr`` as ``evaluate`` does (``/`` floors), None when too
    deep or of a kind this does not know."""
    if depth > 40:
        return None
    if isinstance(expr, s.Num) and type(expr.value) is int:
        return repr(expr.value)
    if isinstance(expr, s.Var):
        return f"env[{expr.name!r}]"
    if isinstance(expr, s.Neg):
        inner = _source(expr.operand, depth + 1)
        return None if inner is None else f"(-{inner})"
    if isinstance(expr, s.BinOp) and expr.op in ("+", "-", "*", "/", "%"):
        left, right = _source(expr.left, depth + 1), _source(expr.right, depth + 1)
        if left is None or right is None:
            return None
        if expr.op == "*":
            return f"_mul({left}, {right})"
        return f"({left} {'//' if expr.op == '/' else expr.op} {right})"
    return None


def evaluate_fast(expr: s.Expr, env: Mapping[str, int]) -> int:
    """``evaluate``, with the expression compiled to Python once: elaborate evaluates the
    same few selectors for each of hundreds of thousands of links. Any failure (an unknown
    name, a division by zero, a product too large, a value not an integer) is left to
    ``evaluate``, which raises its own diagnostic."""
    entry = _COMPILED.get(id(expr))
    if entry is None or entry[0] is not expr:
        if len(_COMPILED) >= _COMPILED_MAX:
            _COMPILED.clear()
        text = _source(expr)
        fn = None if text is None else eval(f"lambda env: {text}", {"_mul": _mul})
        entry = _COMPILED[id(expr)] = (expr, fn)
    fn = entry[1]
    if fn is not None:
        try:
            value = fn(env)
        except Exception:
            pass
        else:
            if type(value) is int:
                return value
    return evaluate(expr, env)
