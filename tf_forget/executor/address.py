"""Is the Ray cluster there? A check in seconds, before the audit writes anything.

`ray.init(address="bogus:1234")` retries for ~10 minutes, printing warnings, before it gives
up (Ray 2.60: ~40 s per attempt, 20 attempts). `check_address` opens (and closes) one TCP
connection to the cluster's port with a timeout that also bounds the name lookup, and raises a
one-line `ExecutorError` naming the address when it fails:

  cannot reach the Ray cluster at bogus:1234: Name or service not known

With `handshake_s` (the audit's validation) it also checks that the port answers as
a gRPC server (Ray's GCS and client server are): a port that accepts TCP but is something else
would keep `ray.init` retrying for minutes.

Addresses, as `ray.init` reads them:
  * "host:port": a cluster's GCS (the port of `ray start --head`, 6379 by default);
  * "ray://host:port": a Ray client server (10001 if the port is left out);
  * "auto": the cluster `ray.init("auto")` would pick: $RAY_ADDRESS if set, else the last
    `ray start` on this machine (<ray temp dir>/ray_current_cluster), else a GCS process running
    here. Ray's own lookup (`ray._private.services.get_ray_address_from_environment`) is used
    so that the answer is the one `ray.init` finds.
"""

import os
import socket
import threading

from tf_forget.executor import executor_api

DEFAULT_TIMEOUT_S = 10.0
# HTTP/2's client connection preface and an empty SETTINGS frame (RFC 9113 §3.4, §6.5): what a
# gRPC client sends first. Ray's GCS and its client server are gRPC servers; their first frame
# back is a SETTINGS frame (9-byte header: length, type 0x4, flags, stream 0).
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_H2_SETTINGS = 4
CLIENT_PORT = 10001  # Ray client server's default port (`ray start --ray-client-server-port`)
_USAGE = "ray address must be 'auto', 'host:port' or 'ray://host:port'"


def split(address):
  """(host, port) of "host:port" or "ray://host[:port]" ("[v6]:port" too).

  Raises:
    ExecutorError: another form, or a port that is not a number in 1..65535.
  """
  rest = address
  if "://" in address:
    scheme, _, rest = address.partition("://")
    if scheme != "ray":
      raise executor_api.ExecutorError(f"{_USAGE}, got {address!r}")
    rest = rest.rstrip("/")
    if ":" not in rest.rpartition("]")[2]:
      rest = f"{rest}:{CLIENT_PORT}"
  host, _, port = rest.rpartition(":")
  host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
  if not host or not port.isdigit() or not 0 < int(port) < 65536:
    raise executor_api.ExecutorError(f"{_USAGE}, got {address!r}")
  return host, int(port)


def resolve_auto():
  """The address `ray.init(address="auto")` would connect to.

  Raises:
    ExecutorError: Ray is not installed, or no cluster is found (one line).
  """
  try:
    from ray._private import services
    from ray._private import utils
  except ImportError as e:
    raise executor_api.ExecutorError("ray is not installed: pip install ray==2.60.0") from e
  try:
    found = services.get_ray_address_from_environment("auto", None)
  except ConnectionError:
    found = None
  if not found or found == "auto":
    raise executor_api.ExecutorError(
      "ray address 'auto': no running Ray cluster found (RAY_ADDRESS is unset, "
      f"{utils.get_ray_address_file(None)} names none and no Ray runs on this machine): "
      "start one with `ray start --head` or give its address"
    )
  return found


def reason(exc):
  """`exc` of a failed connection in a few words ("Connection refused", "timed out")."""
  text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
  return " ".join(text.split())


def probe(host, port, timeout_s):
  """Opens and closes a TCP connection to host:port within `timeout_s` (name lookup included).

  Raises:
    OSError: the lookup or the connection failed; TimeoutError after `timeout_s` seconds.
  """
  _bounded(
    lambda: socket.create_connection((host, port), timeout=timeout_s).close(), timeout_s, "answer"
  )


def _bounded(fn, timeout_s, what):
  """fn()'s result, waited for at most `timeout_s` seconds in a daemon thread.

  Raises:
    OSError: what fn raised; TimeoutError "no <what> within <timeout_s> s".
  """
  box = {}

  def attempt():
    try:
      box["result"] = fn()
    except OSError as e:
      box["error"] = e

  thread = threading.Thread(target=attempt, daemon=True, name="tf_forget-ray-probe")
  thread.start()
  thread.join(timeout_s)
  if thread.is_alive():
    raise TimeoutError(f"no {what} within {timeout_s:g} s")
  if "error" in box:
    raise box["error"]
  return box.get("result")


def handshake(host, port, timeout_s):
  """Checks within `timeout_s` that host:port answers an HTTP/2 (gRPC) client as Ray does.

  A port that accepts TCP but is no Ray cluster (another service, a proxy that drops the
  connection) would keep `ray.init` retrying for minutes. The check sends HTTP/2's client
  preface and reads the first frame header back: a gRPC server's is a SETTINGS frame.

  Raises:
    OSError: the connection failed or was closed; TimeoutError: no answer within `timeout_s`;
      ConnectionError: an answer that is not HTTP/2 (its first bytes named).
  """

  def exchange():
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
      sock.sendall(_H2_PREFACE)
      head = b""
      while len(head) < 9:
        chunk = sock.recv(9 - len(head))
        if not chunk:
          break
        head += chunk
      return head

  head = _bounded(exchange, timeout_s, "answer")
  if not head:
    raise ConnectionError("it closed the connection without a word")
  if len(head) < 9 or head[3] != _H2_SETTINGS or int.from_bytes(head[5:9], "big") & 0x7FFFFFFF:
    raise ConnectionError(f"it answered {head[:9]!r}, not an HTTP/2 SETTINGS frame")


def check_address(name, address, timeout_s=DEFAULT_TIMEOUT_S, handshake_s=None):
  """Checks within `timeout_s` seconds that the executor `name` can reach `address`.

  Call it before writing anything: `ray.init` on an unreachable address hangs for minutes.

  Args:
    name: the executor's name (`--executor`); only "ray" with an address is checked.
    address: None (a local Ray: nothing to reach), "auto", "host:port" or "ray://host:port".
    timeout_s: seconds for the name lookup and the TCP connection together.
    handshake_s: also check, within these seconds, that the port answers as a gRPC server
      (`handshake`); None: the TCP connection only. Skipped under RAY_USE_TLS (Ray's TLS
      would answer the plain preface with a TLS alert).

  Returns:
    The "host:port" reached (None when there is nothing to check).

  Raises:
    ExecutorError: "cannot reach the Ray cluster at <address>: <reason>", "<address> answers
      but is not a Ray cluster: <reason>", or a bad address, or no cluster for "auto" (one
      line each).
  """
  if name != "ray" or address is None or address == "local":
    return None
  if not isinstance(address, str) or not address:
    raise executor_api.ExecutorError(f"{_USAGE}, got {address!r}")
  where = address
  if address == "auto":
    resolved = resolve_auto()
    where = f"auto ({resolved})"
    host, port = split(resolved)
  else:
    host, port = split(address)
  try:
    probe(host, port, timeout_s)
  except OSError as e:  # TimeoutError and socket.gaierror are OSErrors
    raise executor_api.ExecutorError(
      f"cannot reach the Ray cluster at {where}: {reason(e)}"
    ) from None
  tls = os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")
  if handshake_s is not None and not tls:
    try:
      handshake(host, port, handshake_s)
    except OSError as e:
      raise executor_api.ExecutorError(
        f"{where} answers but is not a Ray cluster ({reason(e)}): give the address of its "
        "GCS (host:6379, printed by `ray start --head`) or ray://host:10001"
      ) from None
  return f"{host}:{port}"
