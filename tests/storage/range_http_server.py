"""A small HTTP server of a folder that answers HEAD and single byte ranges (206), which
python's http.server does not: the HTTP store's tests read through it."""
import http.server
import os
import re
import threading
import urllib.parse

RANGE = re.compile(r"bytes=(\d+)-(\d*)$")


def handler_for(root):
    """A request handler class serving the files under `root`."""

    class RangeHandler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _answer(self, with_body):
            key = urllib.parse.unquote(self.path.lstrip("/").split("?")[0])
            path = os.path.realpath(os.path.join(root, key))
            if not path.startswith(os.path.realpath(root)) or not os.path.isfile(path):
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            size = os.path.getsize(path)
            begin, end = 0, size
            match = RANGE.match(self.headers.get("Range", ""))
            if match:
                begin = int(match.group(1))
                end = min(size, int(match.group(2)) + 1) if match.group(2) else size
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {begin}-{end - 1}/{size}")
            else:
                self.send_response(200)
            self.send_header("Content-Length", str(end - begin))
            self.send_header("ETag", f'"{size}-{int(os.path.getmtime(path))}"')
            self.end_headers()
            if with_body:
                with open(path, "rb") as file:
                    file.seek(begin)
                    self.wfile.write(file.read(end - begin))

        def do_GET(self):
            self._answer(True)

        def do_HEAD(self):
            self._answer(False)

    return RangeHandler


def serve(root, port):
    """Starts serving `root` on 127.0.0.1:`port` in a daemon thread; returns the server."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler_for(root))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
