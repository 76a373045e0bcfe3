"""Every public class, function, method and property has a docstring, so
help(weft.InferenceSession) and the others explain themselves."""
import inspect

import weft


def _public_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_"):
            continue
        if inspect.isfunction(member) or isinstance(member, property):
            yield name, member


def test_every_public_name_is_documented():
    undocumented = []
    assert weft.__doc__
    for name in weft.__all__:
        obj = getattr(weft, name)
        if name == "config":
            for fn_name in vars(obj.threading):
                fn = getattr(obj.threading, fn_name)
                if callable(fn) and not (fn.__doc__ or "").strip():
                    undocumented.append(f"config.threading.{fn_name}")
            continue
        if not (obj.__doc__ or "").strip():
            undocumented.append(name)
        if inspect.isclass(obj):
            for member_name, member in _public_members(obj):
                if not (member.__doc__ or "").strip():
                    undocumented.append(f"{name}.{member_name}")
    assert undocumented == []


def test_help_shows_the_inference_session_contract():
    text = inspect.getdoc(weft.InferenceSession)
    assert "ONNX Runtime" in text and "GIL" in text
    assert "without a copy" in inspect.getdoc(weft.InferenceSession.run)
