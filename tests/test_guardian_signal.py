"""A guardian that is itself told to stop (SIGTERM: a CI runner cancelling the job, or a
`pkill -f` of the run's python, reaches the whole process tree at once) stops what it
watches first: seen leaving two control planes behind when it did not."""

from __future__ import annotations

import fcntl
import signal
import struct
import subprocess
import sys
import termios

from crdharness.guardian import Guardian
from crdharness.polling import wait_for
from crdharness.processes import identity, is_alive


def unread(guardian: Guardian) -> int:
    """Bytes of orders still in the pipe to the guardian (Linux answers FIONREAD on either end)."""
    assert guardian._proc.stdin is not None
    raw = fcntl.ioctl(guardian._proc.stdin.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return struct.unpack("i", raw)[0]


def test_a_guardian_told_to_stop_stops_what_it_watches_first():
    stand_in = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
    )
    guardian = Guardian()
    try:
        who = identity(stand_in.pid)
        assert who is not None
        guardian.watch(*who)
        wait_for(lambda: unread(guardian) == 0, 30, "the guardian to read its order")
        guardian._proc.send_signal(signal.SIGTERM)
        wait_for(lambda: stand_in.poll() is not None, 30, "the watched process to be stopped")
        assert guardian._proc.wait(30) == 0
    finally:
        if stand_in.poll() is None:
            stand_in.kill()
        stand_in.wait()
    assert not is_alive(stand_in.pid)
