"""A TCP proxy for tests that cuts connections: after every `cut_every` responses forwarded from the broker
it drops the connection right after the broker's bytes were read, so the client never sees that response
and must retry (the broker already applied the request)."""
import socket
import threading


class CuttingProxy:
    def __init__(self, target_port, cut_every=7):
        self.target_port = target_port
        self.cut_every = cut_every
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.cuts = 0
        self.responses = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=10)
            except OSError:
                client.close()
                continue
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, src, dst, from_broker):
        try:
            while not self.stop.is_set():
                data = src.recv(65536)
                if not data:
                    break
                if from_broker:
                    with self.lock:
                        self.responses += 1
                        cut = self.cut_every and self.responses % self.cut_every == 0
                        if cut:
                            self.cuts += 1
                    if cut:
                        break  # drop the response: the client sees a broken connection
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()

    def close(self):
        self.stop.set()
        self.sock.close()
