"""The package's error types: what a user can cause and fix, apart from bugs.

Every check of a user's input (a series, a parameter, a file) raises one of these, with a
message that says what was wrong and what to do. Each also derives from the built-in type a
caller would expect (``ValueError`` for a bad value, ``TypeError`` for a wrong type, ...), so
``except ValueError`` keeps working. The command line reports these on one line and lets any
other exception, a bug, show its traceback.
"""

from __future__ import annotations

__all__ = ["ReinPatchError", "ReinPatchInputError", "ReinPatchTypeError",
           "NonNumericColumnsError", "ReinPatchFileNotFoundError", "TrainingDivergedError",
           "SavedOnGPUError"]


class ReinPatchError(Exception):
    """Base of the errors a user can cause and fix; the message says how."""


class ReinPatchInputError(ReinPatchError, ValueError):
    """A bad value: a series, a parameter or a file's content."""


class ReinPatchTypeError(ReinPatchError, TypeError):
    """An input of the wrong type, such as a non-numeric column."""


class NonNumericColumnsError(ReinPatchInputError, TypeError):
    """Columns that do not hold numbers (text, categories, dates): a bad value of a table and a
    wrong type of its columns, so both ``ValueError`` and ``TypeError``."""


class ReinPatchFileNotFoundError(ReinPatchError, FileNotFoundError):
    """A file or folder the user named does not exist."""


class TrainingDivergedError(ReinPatchError, RuntimeError):
    """Training stopped because the loss became NaN or infinite."""


class SavedOnGPUError(ReinPatchError, RuntimeError):
    """A model saved on a GPU loaded on a machine without one (needs ``map_location``)."""
