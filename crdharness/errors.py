"""The one exception type users see."""


class HarnessError(Exception):
    """A problem the user can fix.

    The message is a single line that says what is wrong and what to do about it; the CLI and
    the pytest plugin print it without a traceback.
    """
