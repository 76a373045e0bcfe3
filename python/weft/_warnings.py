"""The categories of weft's warnings, as Python's ``warnings`` module sees
them: every warning the C++ core emits (weft/warnings.h) is raised through
``warnings.warn`` with one of these, so ``warnings.filterwarnings`` and
``python -W error::weft.ThreadingWarning`` select it."""


class WeftWarning(UserWarning):
    """Base of weft's warnings: weft did something other than what was
    asked, without failing."""


class ThreadingWarning(WeftWarning):
    """Thread counts, pools, pinning: what runs differs from what was asked
    (e.g. a shared pool smaller than requested)."""


class ConfigurationWarning(WeftWarning):
    """A setting or environment variable not used as given."""


class PerformanceWarning(WeftWarning):
    """It runs as asked, but slower than it could."""


_BY_NAME = {
    "threading": ThreadingWarning,
    "configuration": ConfigurationWarning,
    "performance": PerformanceWarning,
}


def category_named(name):
    """The class for a C++ category name; WeftWarning for an unknown one."""
    return _BY_NAME.get(name, WeftWarning)
