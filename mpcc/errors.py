"""User-facing errors of the mpcc command line: reported as one line on stderr, never a traceback."""


class UserError(Exception):
    """Bad input or a request that cannot be met; ``str(exc)`` is the one-line message."""

    def __init__(self, message: str, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
