"""Option objects that refuse what they would otherwise ignore (not public).

An option object (SessionOptions, RunOptions, ConfigProto,
ThreadPoolOptionProto) declares its fields with a checker each. Assigning a
name that is no field raises AttributeError with the nearest field named, so
``so.intra_op_threads = 2`` (a typo) fails where it is written instead of
being kept and ignored; a value of the wrong type raises TypeError naming
the field, as PyTorch's setters do.
"""

import difflib as _difflib
import operator as _operator
import warnings as _warnings


def did_you_mean(name, candidates):
    """' (did you mean 'x'?)' for the nearest candidate, or ''."""
    near = _difflib.get_close_matches(name, list(candidates), n=1, cutoff=0.6)
    return f" (did you mean '{near[0]}'?)" if near else ""


def integer(what, value):
    """``value`` as an int: Python and NumPy integers only (bool, float and
    str are TypeError, as in ``torch.set_num_threads``)."""
    if isinstance(value, bool):
        raise TypeError(f"{what} must be an integer, not bool ({value!r})")
    try:
        return _operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, not "
                        f"{type(value).__name__} ({value!r})") from None


def boolean(what, value):
    """``value`` as a bool: Python and NumPy booleans only (the number 2 or
    the string "False" is a TypeError, not silently truthy)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return bool(value)
    raise TypeError(f"{what} must be True or False, not "
                    f"{type(value).__name__} ({value!r})")


def text(what, value):
    """``value`` as a str."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__} "
                        f"({value!r})")
    return value


def member_of(enum_type):
    """A checker taking a member of ``enum_type`` or its integer value."""

    def check(what, value):
        try:
            return enum_type(integer(what, value))
        except ValueError:
            names = ", ".join(m.name for m in enum_type)
            raise ValueError(f"{what} must be one of {names}, not "
                             f"{value!r}") from None

    return check


def dict_of(key_checker, value_checker):
    """A checker taking a dict whose keys and values pass the checkers."""

    def check(what, value):
        if not isinstance(value, dict):
            raise TypeError(f"{what} must be a dict, not "
                            f"{type(value).__name__} ({value!r})")
        return {key_checker(f"{what} key", k): value_checker(f"{what}[{k!r}]", v)
                for k, v in value.items()}

    return check


def list_of(item_checker):
    """A checker taking a list or tuple whose items pass ``item_checker``."""

    def check(what, value):
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"{what} must be a list, not "
                            f"{type(value).__name__} ({value!r})")
        return [item_checker(f"{what}[{i}]", v) for i, v in enumerate(value)]

    return check


class StrictOptions:
    """Base of the option objects. A subclass sets ``_FIELDS``, a dict of
    field name to checker ``(what, value) -> value``; properties the class
    defines (with a setter) are assignable as well. Names starting with an
    underscore are the object's own state."""

    _FIELDS = {}
    # Fields of the peer's class that weft does not act on, with why: set,
    # they are kept but say so with a RuntimeWarning, so that a script
    # written for the peer still runs and nothing is ignored in silence.
    _NOT_ACTED_ON = {}

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
            return
        checker = type(self)._FIELDS.get(name)
        if name in type(self)._NOT_ACTED_ON:
            _warnings.warn(
                f"weft does not act on {type(self).__name__}.{name}: "
                f"{type(self)._NOT_ACTED_ON[name]}", RuntimeWarning,
                stacklevel=2)
        elif checker is not None:
            value = checker(f"{type(self).__name__}.{name}", value)
        elif not isinstance(getattr(type(self), name, None), property):
            known = set(type(self)._FIELDS) | set(type(self)._NOT_ACTED_ON) | {
                n for n in dir(type(self))
                if isinstance(getattr(type(self), n), property)}
            raise AttributeError(
                f"{type(self).__name__} has no option '{name}'"
                f"{did_you_mean(name, known)}; its options are "
                f"{', '.join(sorted(known))}")
        object.__setattr__(self, name, value)

    def __repr__(self):
        fields = ", ".join(f"{n}={getattr(self, n)!r}"
                           for n in type(self)._FIELDS)
        return f"{type(self).__name__}({fields})"
