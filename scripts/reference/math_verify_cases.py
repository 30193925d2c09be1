"""
Ports the cases of Math-Verify's tests/test_all.py into src/rewards/math/math-verify-cases.json.

Math-Verify (https://github.com/huggingface/Math-Verify, Apache-2.0; the test file itself carries
an MIT notice, Copyright (c) 2024 The HuggingFace Team). Only test_all.py is ported: the other
test files are a held-out check and are deliberately not read here.

Reads the test file's AST (nothing is imported or run): every `@pytest.mark.parametrize` table of a
test that calls `compare_strings`, with the call's match types, precision and
allow_set_relation_comp, plus the literal `compare_strings(...)` asserts. Direct `sympy_expr_eq`
asserts (grader internals, not strings) are not cases.

Usage: python3 scripts/reference/math_verify_cases.py path/to/test_all.py > src/rewards/math/math-verify-cases.json
"""
import ast
import json
import math
import sys


def value(node, scope):
    """A literal, an f-string or a name bound by the parametrize row."""
    if isinstance(node, ast.Name):
        return scope[node.id]
    return eval(compile(ast.Expression(node), "<case>", "eval"), {"math": math})


def call_options(call, scope):
    options = {"matchTypes": ["latex", "expr"], "precision": 6, "allowSetRelationComp": False}
    keys = {"match_types": "matchTypes", "precision": "precision", "allow_set_relation_comp": "allowSetRelationComp"}
    for keyword in call.keywords:
        if keyword.arg in keys:
            options[keys[keyword.arg]] = value(keyword.value, scope)
    return options


def compare_calls(function):
    return [
        node
        for node in ast.walk(function)
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "compare_strings"
    ]


def main(path):
    tree = ast.parse(open(path, encoding="utf8").read())
    cases = []
    for function in tree.body:
        if not isinstance(function, ast.FunctionDef):
            continue
        calls = compare_calls(function)
        parametrize = [
            decorator
            for decorator in function.decorator_list
            if isinstance(decorator, ast.Call) and getattr(decorator.func, "attr", None) == "parametrize"
        ]
        if parametrize:
            names = [name.strip() for name in value(parametrize[0].args[0], {}).split(",")]
            for row in parametrize[0].args[1].elts:
                scope = dict(zip(names, [value(element, {}) for element in row.elts]))
                options = call_options(calls[0], scope)
                cases.append(
                    {
                        "test": function.name,
                        "line": row.lineno,
                        "gold": scope["gold"],
                        "pred": scope["pred"],
                        "expected": bool(scope["expected"]),
                        **options,
                    }
                )
        else:
            for call in calls:  # a literal assert: `compare_strings(gold, pred, ...) == expected`
                parent = next(
                    node
                    for node in ast.walk(function)
                    if isinstance(node, ast.Compare) and node.left is call
                )
                cases.append(
                    {
                        "test": function.name,
                        "line": call.lineno,
                        "gold": value(call.args[0], {}),
                        "pred": value(call.args[1], {}),
                        "expected": bool(value(parent.comparators[0], {})),
                        **call_options(call, {}),
                    }
                )
    json.dump(
        {
            "source": "https://github.com/huggingface/Math-Verify tests/test_all.py",
            "licence": "Math-Verify is Apache-2.0; test_all.py carries an MIT notice, Copyright (c) 2024 The HuggingFace Team",
            "generator": "scripts/reference/math_verify_cases.py",
            "cases": cases,
        },
        sys.stdout,
        indent=1,
        ensure_ascii=False,
    )
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1])
