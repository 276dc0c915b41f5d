"""User-facing errors.  The command line prints any ``XltError`` as one line ``xlt: error: ...`` (exit status 2);
everything else is a bug and keeps its traceback."""
from __future__ import annotations


class XltError(Exception):
    """A problem the user can fix: a config, a data file, a missing package, a run folder."""


class ConfigError(XltError, ValueError):
    """A config key, value or combination is wrong (named in the message)."""


class DataError(XltError, ValueError):
    """A data file is unusable (missing, empty, or mostly invalid); the message names the file and line."""


class MissingData(DataError):
    """A data file or folder that is not there (``xlt data check`` reports it as absent, not as damaged)."""
