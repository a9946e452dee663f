"""Child processes' stderr forwarded to wherever this process's stderr is when they write.

A child inherits file descriptor 2 when it starts. A pool started before the command moves its
log into the run directory (`tf_forget.cli.console.attach` points this process's descriptor 2
at a new file) would keep writing to the old one. Started within a `Pipe` block, the children
get the write end of a pipe instead; once the block ends, a daemon thread of this process copies
what they write to its own descriptor 2 as it is at that moment, until every child has closed
the pipe (`Pipe.join`).

    with forwarded_stderr.Pipe() as pipe:
      start_the_children()
    ...
    pipe.join(timeout=2)  # once they have exited: what they wrote last is copied

Standard library only.
"""

import os
import threading

_CHUNK = 65536


class Pipe:
  """The pipe the children started in its block write their stderr to, and its copying thread."""

  def __init__(self):
    self._read_fd = None
    self._saved = None
    self._thread = None

  def __enter__(self):
    self._read_fd, write_fd = os.pipe()
    self._saved = os.dup(2)
    os.dup2(write_fd, 2)  # what this process writes within the block goes there too
    os.close(write_fd)
    return self

  def __exit__(self, *exc_info):
    os.dup2(self._saved, 2)  # the children keep the pipe; descriptor 2 is this process's again
    os.close(self._saved)
    self._thread = threading.Thread(target=self._copy, name="forwarded-stderr", daemon=True)
    self._thread.start()
    return False

  def _copy(self):
    try:
      while True:
        data = os.read(self._read_fd, _CHUNK)
        if not data:
          return
        try:
          while data:
            data = data[os.write(2, data) :]
        except OSError:
          pass  # this process's stderr is gone: the children's lines go with it
    finally:
      os.close(self._read_fd)

  def join(self, timeout=None):
    """Waits until every child holding the pipe has exited and its output is copied (or
    `timeout` seconds)."""
    if self._thread is not None:
      self._thread.join(timeout)
