"""A fault-injecting HTTP proxy for the storage tests: in front of a server, it answers some
requests with a fault drawn from a seeded generator (503 SlowDown, a stall, a body cut short,
a connection reset) and forwards the others unchanged (the Host header too, so SigV4
signatures still hold). Every injected fault is appended to a log, one line each. Like AWS (and
unlike SeaweedFS), it can refuse a request that lacks a header S3 requires of SigV4 requests,
`x-amz-content-sha256`, before any fault. It can also limit the bandwidth of every answer
together, like one link (`bytes_per_second`)."""
import random
import socket
import struct
import threading
import time

FAULTS = ("slowdown", "stall", "cut", "reset")
SLOWDOWN = (b"<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
            b"<Message>Please reduce your request rate.</Message></Error>")


def read_head(sock):
    """The bytes of an HTTP message head (up to the blank line), and what followed it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None, b""
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def with_connection_close(head):
    """`head` with its Connection header replaced by `Connection: close`."""
    lines = [line for line in head.split(b"\r\n")[:-2]
             if not line.lower().startswith(b"connection:")]
    return b"\r\n".join(lines + [b"Connection: close", b"", b""])


class FaultProxy:
    """Listens on 127.0.0.1:`port` and forwards to 127.0.0.1:`upstream`; a request gets a fault
    with probability `rate` (the kind drawn among `kinds`), from `random.Random(seed)`."""

    def __init__(self, port, upstream, rate, seed, kinds, log_path, stall_seconds=3.0,
                 required_headers=(), bytes_per_second=None):
        self.upstream, self.rate, self.kinds = upstream, rate, kinds
        self.bytes_per_second, self.link_free_at = bytes_per_second, 0.0
        self.required = [name.lower().encode() + b":" for name in required_headers]
        self.random, self.lock = random.Random(seed), threading.Lock()
        self.log_path, self.stall_seconds = log_path, stall_seconds
        self.listener = socket.create_server(("127.0.0.1", port))
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.listener.accept()
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _draw(self):
        with self.lock:
            if self.random.random() >= self.rate:
                return None
            return self.random.choice(self.kinds)

    def _serve(self, client):
        try:
            head, _ = read_head(client)
            if head is None:
                return
            lines = [line.lower() for line in head.split(b"\r\n")]
            missing = [name for name in self.required
                       if not any(line.startswith(name) for line in lines)
                       or name[:-1] not in next((line for line in lines
                                                 if line.startswith(b"authorization:")), b"")]
            if missing:
                body = (b"<Error><Code>InvalidRequest</Code><Message>Missing required header: "
                        + missing[0][:-1] + b" (sent and signed)</Message></Error>")
                client.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n"
                               b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
                               + body)
                return
            fault = self._draw()
            if fault:
                with self.lock, open(self.log_path, "a", encoding="utf-8") as log:
                    log.write(f"{fault} {head.split(b' ')[1].decode(errors='replace')}\n")
            if fault == "slowdown":
                client.sendall(b"HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
                               b"Connection: close\r\nContent-Length: "
                               + str(len(SLOWDOWN)).encode() + b"\r\n\r\n" + SLOWDOWN)
                return
            if fault == "reset":
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                return
            if fault == "stall":
                time.sleep(self.stall_seconds)
                return
            response = self._forward(with_connection_close(head))
            if fault == "cut":
                response_head, _, body = response.partition(b"\r\n\r\n")
                response = response_head + b"\r\n\r\n" + body[: len(body) // 2]
            self._send(client, response)
        except OSError:
            pass
        finally:
            client.close()

    def _send(self, client, response):
        """Sends `response`, paced so that all the answers together keep within
        `bytes_per_second` (when set), as they would on a link of that bandwidth."""
        if not self.bytes_per_second:
            client.sendall(response)
            return
        for start in range(0, len(response), 1 << 16):
            chunk = response[start:start + (1 << 16)]
            with self.lock:  # a link that idled keeps 10 ms of its time, as a buffer would
                self.link_free_at = (max(self.link_free_at, time.monotonic() - 0.01)
                                     + len(chunk) / self.bytes_per_second)
                due = self.link_free_at
            time.sleep(max(0.0, due - time.monotonic()))
            client.sendall(chunk)

    def _forward(self, head):
        with socket.create_connection(("127.0.0.1", self.upstream)) as upstream:
            upstream.sendall(head)
            chunks = []
            while True:
                chunk = upstream.recv(1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        response = b"".join(chunks)
        response_head, _, body = response.partition(b"\r\n\r\n")
        return with_connection_close(response_head + b"\r\n\r\n") + body
