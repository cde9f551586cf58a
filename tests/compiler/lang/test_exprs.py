"""``evaluate_fast`` (an expression compiled to Python once) gives ``evaluate``'s value, and
leaves every failure to ``evaluate``'s own diagnostic."""

from __future__ import annotations

import random

import pytest

from topoc.compiler.lang import syntax as s
from topoc.compiler.lang.exprs import EvalError, evaluate, evaluate_fast


def _expr(rng: random.Random, depth: int = 0):
    pick = rng.random()
    if depth > 4 or pick < 0.3:
        return s.Num(rng.randint(-9, 300), None)
    if pick < 0.5:
        return s.Var(rng.choice("abq"), None)
    if pick < 0.55:
        return s.Neg(_expr(rng, depth + 1), None)
    return s.BinOp(rng.choice("+-*/%"), _expr(rng, depth + 1), _expr(rng, depth + 1), None)


def _outcome(fn, expr, env):
    try:
        return fn(expr, env)
    except EvalError as exc:
        return exc.diagnostic.code, exc.diagnostic.message


def test_same_value_or_same_diagnostic_on_random_expressions():
    rng = random.Random(24)
    for _ in range(3000):
        expr = _expr(rng)
        env = {"a": rng.randint(-5, 9), "b": rng.randint(0, 2**31), "q": 0}
        if rng.random() < 0.2:
            env.pop("q")                        # an unknown name: E114
        assert _outcome(evaluate_fast, expr, env) == _outcome(evaluate, expr, env)


def test_a_product_past_the_bound_is_e297_as_evaluate_says():
    big = s.BinOp("*", s.Var("a", None), s.Var("a", None), None)
    with pytest.raises(EvalError) as exc:
        evaluate_fast(big, {"a": 2**40})
    assert exc.value.diagnostic.code == "E297"
    assert evaluate_fast(big, {"a": 2**20}) == 2**40
