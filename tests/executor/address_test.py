"""check_address: an unreachable Ray cluster is a one-line error in seconds.

No network needed: a closed port on 127.0.0.1, a name no resolver knows ("bogus"), a listening
socket of the test's own, servers of the test's own that answer as gRPC does or otherwise
(the handshake check).
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from tf_forget import executor
from tf_forget.executor import address
from tf_forget.executor import ray_executor

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _closed_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


@pytest.fixture
def listening():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    s.listen(8)
    yield s.getsockname()[1]


def _fails_fast(name, addr, match, **kwargs):
  start = time.monotonic()
  with pytest.raises(executor.ExecutorError) as info:
    executor.check_address(name, addr, **kwargs)
  assert time.monotonic() - start < 5.0
  assert "\n" not in str(info.value)
  assert info.value.__cause__ is None  # nothing more is printed
  if match.endswith("$"):
    assert str(info.value) == match[:-1]
  else:
    assert str(info.value).startswith(match)
  return str(info.value)


def test_a_closed_port_fails_at_once():
  port = _closed_port()
  _fails_fast(
    "ray",
    f"127.0.0.1:{port}",
    f"cannot reach the Ray cluster at 127.0.0.1:{port}: Connection refused$",
  )
  _fails_fast(
    "ray",
    f"ray://127.0.0.1:{port}",
    f"cannot reach the Ray cluster at ray://127.0.0.1:{port}: Connection refused$",
  )


@pytest.mark.parametrize("addr", ["bogus:1234", "ray://bogus:1234"])
def test_an_unknown_host_fails_at_once(addr):
  message = _fails_fast("ray", addr, f"cannot reach the Ray cluster at {addr}: ")
  assert len(message) > len(f"cannot reach the Ray cluster at {addr}: ")  # says why


def test_a_listening_port_is_reached(listening):
  assert executor.check_address("ray", f"127.0.0.1:{listening}") == f"127.0.0.1:{listening}"
  assert executor.check_address("ray", f"ray://127.0.0.1:{listening}/") == (
    f"127.0.0.1:{listening}"
  )


@pytest.fixture
def answering():
  """Yields start(reply): a server on 127.0.0.1 that answers every connection with `reply`
  (None: says nothing) and reads until the client closes; start returns its port."""
  servers = []

  def start(reply):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)

    def serve():
      while True:
        try:
          conn, _ = server.accept()
        except OSError:
          return  # closed
        with conn:
          try:
            if reply is not None:
              conn.sendall(reply)
            while conn.recv(64):  # until the client closes
              pass
          except OSError:
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    servers.append(server)
    return server.getsockname()[1]

  yield start
  for server in servers:
    try:
      server.shutdown(socket.SHUT_RDWR)  # wakes the accept
    except OSError:
      pass
    server.close()


# A gRPC server's first frame: an empty SETTINGS frame (RFC 9113 §6.5: length 0, type 0x4,
# flags 0, stream 0).
_SETTINGS = bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def test_the_handshake_tells_a_grpc_server_from_another_service(answering):
  grpc_like = answering(_SETTINGS)
  assert executor.check_address("ray", f"ray://127.0.0.1:{grpc_like}", handshake_s=2.0) == (
    f"127.0.0.1:{grpc_like}"
  )
  other = answering(b"HTTP/1.1 400 Bad Request\r\n\r\n")
  _fails_fast(
    "ray",
    f"ray://127.0.0.1:{other}",
    f"ray://127.0.0.1:{other} answers but is not a Ray cluster (it answered "
    "b'HTTP/1.1 ', not an HTTP/2 SETTINGS frame): ",
    handshake_s=2.0,
  )
  silent = answering(None)
  _fails_fast(
    "ray",
    f"127.0.0.1:{silent}",
    f"127.0.0.1:{silent} answers but is not a Ray cluster (no answer within 1 s): ",
    handshake_s=1.0,
  )
  assert executor.check_address("ray", f"127.0.0.1:{silent}") == f"127.0.0.1:{silent}"


def test_the_handshake_is_skipped_under_ray_tls(answering, monkeypatch):
  other = answering(b"\x15\x03\x03\x00\x02\x02\x46")  # a TLS alert: cannot judge
  monkeypatch.setenv("RAY_USE_TLS", "1")
  assert executor.check_address("ray", f"127.0.0.1:{other}", handshake_s=1.0) == (
    f"127.0.0.1:{other}"
  )


def test_nothing_to_check():
  assert executor.check_address("ray", None) is None  # a local Ray
  assert executor.check_address("local", None) is None
  assert executor.check_address("inline", "bogus:1234") is None


@pytest.mark.parametrize(
  "addr", ["bogus", "http://bogus:1234", "bogus:0", "bogus:http", "ray://:1234", ""]
)
def test_malformed_addresses(addr):
  _fails_fast("ray", addr, "ray address must be 'auto', 'host:port' or 'ray://host:port', got ")


def test_split_defaults_the_client_port_and_takes_ipv6():
  assert address.split("ray://head") == ("head", 10001)
  assert address.split("[::1]:6379") == ("::1", 6379)


def test_a_lookup_that_hangs_is_bounded(monkeypatch):
  def hang(*args, **kwargs):
    del args, kwargs
    time.sleep(3)
    raise socket.timeout("timed out")

  monkeypatch.setattr(socket, "create_connection", hang)
  _fails_fast(
    "ray",
    "slow:1234",
    "cannot reach the Ray cluster at slow:1234: no answer within 0.5 s$",
    timeout_s=0.5,
  )


def test_auto_follows_ray_address_and_names_what_it_found(monkeypatch):
  port = _closed_port()
  monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
  _fails_fast(
    "ray", "auto", f"cannot reach the Ray cluster at auto (127.0.0.1:{port}): Connection refused$"
  )


def test_auto_without_a_cluster(monkeypatch):
  from ray._private import services

  monkeypatch.delenv("RAY_ADDRESS", raising=False)
  # Other Rays may run on a shared machine: pretend there is none, and no `ray start` file.
  monkeypatch.setattr(services, "find_gcs_addresses", frozenset)
  monkeypatch.setattr(services, "find_bootstrap_address", lambda temp_dir: None)
  _fails_fast("ray", "auto", "ray address 'auto': no running Ray cluster found (")


def test_the_ray_executor_checks_before_ray_init():
  start = time.monotonic()
  with pytest.raises(executor.ExecutorError) as info:
    ray_executor.RayExecutor(address="bogus:1234").describe()
  assert time.monotonic() - start < 10.0  # includes importing ray
  assert str(info.value).startswith("cannot reach the Ray cluster at bogus:1234: ")


def test_ray_init_on_a_port_that_is_no_ray_is_bounded(listening):
  # The port answers, so check_address passes, and ray.init retries for minutes: the executor
  # gives up after connect_timeout_s. In a subprocess: the abandoned ray.init thread stays.
  code = (
    "from tf_forget.executor import ray_executor, executor_api\n"
    f"ex = ray_executor.RayExecutor(address='127.0.0.1:{listening}', connect_timeout_s=3)\n"
    "try:\n  ex.describe()\nexcept executor_api.ExecutorError as e:\n  print(e)\n"
  )
  start = time.monotonic()
  done = subprocess.run(
    [sys.executable, "-c", code],
    cwd=_ROOT,
    capture_output=True,
    text=True,
    timeout=120,
    env=dict(os.environ, PYTHONPATH=_ROOT),
  )
  assert time.monotonic() - start < 60.0
  assert done.stdout == (
    f"cannot start or connect to 127.0.0.1:{listening}: ray.init did not return within 3 s\n"
  ), done.stderr


def test_ray_init_keeps_a_python_sigterm_handler():
  def mine(signum, frame):
    del signum, frame

  previous = signal.signal(signal.SIGTERM, mine)
  try:
    with ray_executor._keep_sigterm_handler():
      signal.signal(signal.SIGTERM, lambda *_: None)  # what ray.init does
    assert signal.getsignal(signal.SIGTERM) is mine
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    with ray_executor._keep_sigterm_handler():
      signal.signal(signal.SIGTERM, mine)
    assert signal.getsignal(signal.SIGTERM) is mine  # Ray's own stays where there was none
  finally:
    signal.signal(signal.SIGTERM, previous)
