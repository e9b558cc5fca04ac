"""One value type end to end: what a parameter value is, wherever it goes.

The rule. A script writes every valid value as text (`valid_values: ["1", "2"]`),
because every string an LLM writes must be bounded and a list of mixed JSON
types is hard for small models under constrained decoding. Every consumer then
receives the value converted to the parameter's declared type:

  string   "kitchen" -> "kitchen"
  integer  "15"      -> 15        (15, "15", 15.0 accepted; 15.5 and "fifteen" are not integers)
  number   "2.5"     -> 2.5       (an integral number stays a float: 2.0)
  boolean  "true"    -> True      (true/false, any case)

- the player's wire schema offers the typed values (the number 15, not "15");
- the world (`world.check_action`) accepts a call whose values convert to a
  valid value, text or JSON alike ("15" or 15: `factory eval` parses text), and
  hands the converted values on;
- validation code is called with the converted values, both when script
  verification probes it (`validation_code.probe_calls`) and when a trajectory is
  verified, so code written as `params['litres'] in (1, 2, 3)` for an integer
  parameter and `params['place'] in ('kitchen', 'garden')` for a string one
  behave the same in both places.
"""

from __future__ import annotations

from typing import Any

from .script import Action, Parameter


class NotOfType(ValueError):
    """The value does not convert to the parameter's declared type."""


def typed_value(value: Any, kind: str) -> Any:
    """`value` converted to `kind`; raises NotOfType when it does not convert."""
    if kind == "string":
        if isinstance(value, str):
            return value
        raise NotOfType(value)
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise NotOfType(value)
    return _number(value, kind)


def _number(value: Any, kind: str) -> int | float:
    if isinstance(value, bool):  # True is an int to Python, not a number to a script
        raise NotOfType(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise NotOfType(value) from None
    if kind == "number":
        return number
    if not number.is_integer():
        raise NotOfType(value)
    return int(number)


def valid_typed(param: Parameter) -> list[Any]:
    """The parameter's valid values, converted; a value that does not convert is left out
    (script verification reports it, see `values_problems`)."""
    typed = []
    for text in param.valid_values:
        try:
            value = typed_value(text, param.type)
        except NotOfType:
            continue
        if value not in typed:
            typed.append(value)
    return typed


def values_problems(action: Action) -> list[str]:
    """Valid values that are not of their parameter's declared type."""
    problems = []
    for param in action.parameters:
        for text in param.valid_values:
            try:
                typed_value(text, param.type)
            except NotOfType:
                problems.append(
                    f"action '{action.name}': valid value '{text}' of '{param.name}' is not of type {param.type}"
                )
    return problems


def typed_params(action: Action, params: dict[str, Any]) -> dict[str, Any] | str:
    """The call's values converted to their declared types, or why they are not valid
    (the parameter's name, for the caller to word)."""
    out = {}
    for spec in action.parameters:
        try:
            value = typed_value(params[spec.name], spec.type)
        except NotOfType:
            return spec.name
        if value not in valid_typed(spec):
            return spec.name
        out[spec.name] = value
    return out


def invalid_value(param: Parameter) -> Any | None:
    """A value of the right type that is not valid (to probe validation code), or None
    when every value of the type is valid (a boolean with both)."""
    valid = valid_typed(param)
    if param.type == "string":
        return "not_a_valid_value"
    if param.type == "boolean":
        rest = [b for b in (True, False) if b not in valid]
        return rest[0] if rest else None
    numbers = [v for v in valid if isinstance(v, (int, float))]
    candidate = (max(numbers) if numbers else 0) + 1000
    return float(candidate) if param.type == "number" else int(candidate)
