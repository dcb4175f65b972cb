"""The noisy-neighbour bench's receivers (bench/noisy_neighbour.py), on 127.0.0.1 in the
driver's process: one that accepts every connection and never answers, one that answers each
connection with the next of a list of malformed HTTP answers. Each is bounded in connections and
threads and stops with `close()`."""

import contextlib
import selectors
import socket
import threading


class HangingReceiver:
    """Accepts every connection and never answers: reads and drops what the sender writes until
    it hangs up. One thread; at most MAX_HELD connections (beyond, the oldest is closed)."""

    MAX_HELD = 500

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.setblocking(False)
        self.port = self.listener.getsockname()[1]
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ)
        self.held: list[socket.socket] = []
        self.accepted = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                if key.fileobj is self.listener:
                    with contextlib.suppress(BlockingIOError):
                        connection, _ = self.listener.accept()
                        connection.setblocking(False)
                        self.selector.register(connection, selectors.EVENT_READ)
                        self.held.append(connection)
                        self.accepted += 1
                    if len(self.held) > self.MAX_HELD:
                        self._close(self.held[0])
                    continue
                try:
                    data = key.fileobj.recv(65536)
                except OSError:
                    data = b""
                if not data:
                    self._close(key.fileobj)
        for connection in list(self.held):
            self._close(connection)
        self.selector.close()
        self.listener.close()

    def _close(self, connection: socket.socket) -> None:
        self.selector.unregister(connection)
        self.held.remove(connection)
        connection.close()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)


def _reset(connection: socket.socket) -> None:
    # SO_LINGER on with a zero timeout: close() sends a TCP reset instead of a FIN.
    connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


def _trickle(connection: socket.socket, stopping: threading.Event) -> None:
    """A status line, then a header one byte every half second for 15 s (past any send budget)."""
    connection.sendall(b"HTTP/1.1 200 OK\r\n")
    for _ in range(30):
        if stopping.wait(0.5):
            return
        connection.sendall(b"X")


# Each connection gets the next of these: what a receiver can answer that is not HTTP as a
# sender expects it (bytes, or a function of the socket).
HOSTILE_ANSWERS = [
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nok\x00ok",
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: \xc2\xb2\r\nContent-Length: 0\r\n\r\n",
    b"HTTX/1.1 two hundred\r\n\r\n",
    b"HTTP/1.1 500 Odd\r\nX-Odd: \x00\xff\xfe\r\nContent-Length: 0\r\n\r\n",
    (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nok", _reset),
    _trickle,
    b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\nok",
    b"HTTP/1.1 100 Continue\r\n\r\n",
    b"ok\r\n",
]


class HostileReceiver:
    """Answers each connection with the next of HOSTILE_ANSWERS once the request's headers are
    in, then closes it. A thread per connection, at most MAX_THREADS at once (beyond: reset)."""

    MAX_THREADS = 50

    def __init__(self):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.port = self.listener.getsockname()[1]
        self.slots = threading.BoundedSemaphore(self.MAX_THREADS)
        self.answered = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            answer = HOSTILE_ANSWERS[self.answered % len(HOSTILE_ANSWERS)]
            self.answered += 1
            if not self.slots.acquire(blocking=False):
                _reset(connection)
                connection.close()
                continue
            threading.Thread(target=self._answer, args=(connection, answer), daemon=True).start()
        self.listener.close()

    def _answer(self, connection: socket.socket, answer) -> None:
        try:
            connection.settimeout(5)
            received = b""
            while b"\r\n\r\n" not in received and len(received) < 65536:
                chunk = connection.recv(65536)
                if not chunk:
                    return
                received += chunk
            if callable(answer):
                answer(connection, self.stopping)
            elif isinstance(answer, tuple):
                connection.sendall(answer[0])
                answer[1](connection)
            else:
                connection.sendall(answer)
        except OSError:
            pass
        finally:
            connection.close()
            self.slots.release()

    def close(self) -> None:
        self.stopping.set()
        self.thread.join(timeout=5)
