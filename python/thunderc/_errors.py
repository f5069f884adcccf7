"""Exceptions: every failure of the runtime comes back as a thunderc.Error carrying its status code."""
import enum


class StatusCode(enum.IntEnum):
    """thunderc_status_code_t (runtime.h)."""

    OK = 0
    INVALID_ARGUMENT = 1
    NOT_FOUND = 2
    IO = 3
    MANIFEST = 4
    ABI_MISMATCH = 5
    NO_MATCHING_VARIANT = 6
    DEVICE_UNAVAILABLE = 7
    KERNEL_FAILED = 8
    OUT_OF_MEMORY = 9
    INTERNAL = 10


class Error(Exception):
    """An error reported by libthunderc_runtime, or found by this package before calling it.

    code: a StatusCode (a plain int if the runtime is newer than this package), or None for errors
    that are not runtime statuses (RuntimeLibraryError). code_name: the runtime's name for it, e.g.
    "NO_MATCHING_VARIANT". message: the runtime's message, unchanged. hint: what to do, or None.
    """

    def __init__(self, message, code=None, code_name=None, hint=None):
        if code is not None:
            try:
                code = StatusCode(code)
            except ValueError:
                pass
            if code_name is None:
                code_name = code.name if isinstance(code, StatusCode) else "UNKNOWN"
        self.code = code
        self.code_name = code_name
        self.message = message
        self.hint = hint
        text = f"{code_name}: {message}" if code_name else message
        if hint:
            text += f" ({hint})"
        super().__init__(text)

    def __reduce__(self):  # picklable despite the keyword arguments (multiprocessing, concurrent.futures)
        return (_rebuild, (type(self), self.message, self.code, self.code_name, self.hint))


def _rebuild(cls, message, code, code_name, hint):
    return cls(message, code=code, code_name=code_name, hint=hint)


class RuntimeLibraryError(Error, OSError):
    """libthunderc_runtime.so could not be found or loaded, or it speaks another API version."""
