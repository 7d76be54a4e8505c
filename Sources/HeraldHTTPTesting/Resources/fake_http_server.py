#!/usr/bin/env python3
"""Herald FakeHTTPServer: a loopback HTTP/2 (h2 over TLS) and HTTP/1.1 test server.

The Swift side (HeraldHTTPTesting.FakeHTTPServer) runs this file as a child process. It can also be
run alone, to try a client against it by hand:

    python3 fake_http_server.py DIRECTORY [http2|http1]

It writes a fresh CA and server certificate (SAN IP:127.0.0.1, DNS:localhost) into DIRECTORY, listens
on an ephemeral port of 127.0.0.1 and prints {"ok": true, "port": PORT, "ca": "DIRECTORY/ca.pem"}.
`http1` offers only HTTP/1.1 in ALPN. It is then driven with one JSON object per line on stdin and
answers with one JSON object per line on stdout:

    {"cmd": "route", "prefix": "/p", "method": null,
     "responses": [{"status": 200, "headers": {}, "body": "<base64>", "delay": 0.5}]}
    {"cmd": "requests"}      -> {"ok": true, "requests": [{method, path, headers, body, ...}]}
    {"cmd": "reset"}         forgets requests and routes
    {"cmd": "connections"}   -> {"ok": true, "count": N}
    {"cmd": "stop"}          exits; closing stdin exits too

Needs python3 with the `h2` and `cryptography` packages.
"""
import asyncio, base64, datetime, ipaddress, json, os, ssl, sys, threading

import h2.config, h2.connection, h2.events, h2.exceptions, h2.settings
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

LOCK = threading.Lock()
ROUTES = {}  # (prefix, method or None) -> {"responses": [...], "next": int}
REQUESTS = []
STATE = {"connections": 0}
OUT = threading.Lock()


def emit(obj):
    with OUT:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def make_certs(directory):
    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Herald Fake CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                       crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")]))
            .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    paths = {n: os.path.join(directory, n) for n in ("ca.pem", "server.pem", "server.key")}
    with open(paths["ca.pem"], "wb") as f:
        f.write(ca.public_bytes(serialization.Encoding.PEM))
    with open(paths["server.pem"], "wb") as f:
        f.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(paths["server.key"], "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return paths


def next_response(method, path):
    with LOCK:
        best = None
        for (prefix, m), route in ROUTES.items():
            if not path.startswith(prefix) or (m is not None and m != method):
                continue
            rank = (len(prefix), m is not None)
            if best is None or rank > best[0]:
                best = (rank, route)
        if best is None:
            return {"status": 404, "headers": {"content-type": "text/plain"}, "body": b"not found", "delay": 0}
        route = best[1]
        responses = route["responses"]
        if not responses:
            return {"status": 404, "headers": {}, "body": b"", "delay": 0}
        r = responses[min(route["next"], len(responses) - 1)]
        route["next"] += 1
        if b"{{path}}" in r["body"]:
            # An echoing server (a proxy's error page showing the request path).
            raw = path if isinstance(path, bytes) else str(path).encode("utf-8", "replace")
            r = dict(r, body=r["body"].replace(b"{{path}}", raw))
        return r


def record(method, path, headers, body, cid, version):
    merged = {}
    for name, value in headers:
        name = name.lower()
        if name == ":authority" and "host" not in merged:
            merged["host"] = value
        if name.startswith(":"):
            continue
        merged[name] = merged[name] + ", " + value if name in merged else value
    with LOCK:
        REQUESTS.append({"method": method, "path": path, "headers": merged,
                         "body": base64.b64encode(bytes(body)).decode(), "connection_id": cid,
                         "http_version": version})


class H2Session:
    def __init__(self, reader, writer, cid):
        self.reader, self.writer, self.cid = reader, writer, cid
        config = h2.config.H2Configuration(client_side=False, header_encoding="utf-8")
        self.conn = h2.connection.H2Connection(config=config)
        self.conn.local_settings = h2.settings.Settings(client=False, initial_values={
            h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: 1000,
            h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: 65536})
        self.streams = {}
        self.window = asyncio.Event()
        self.closed = False

    def flush(self):
        data = self.conn.data_to_send()
        if data and not self.closed:
            self.writer.write(data)

    async def run(self):
        self.conn.initiate_connection()
        self.flush()
        while True:
            data = await self.reader.read(65536)
            if not data:
                break
            try:
                events = self.conn.receive_data(data)
            except h2.exceptions.ProtocolError:
                self.flush()
                break
            for ev in events:
                if isinstance(ev, h2.events.RequestReceived):
                    self.streams[ev.stream_id] = {"headers": ev.headers, "body": bytearray(), "reset": False}
                elif isinstance(ev, h2.events.DataReceived):
                    s = self.streams.get(ev.stream_id)
                    if s is not None:
                        s["body"] += ev.data
                    self.conn.acknowledge_received_data(ev.flow_controlled_length, ev.stream_id)
                elif isinstance(ev, h2.events.StreamEnded):
                    if ev.stream_id in self.streams:
                        asyncio.ensure_future(self.respond(ev.stream_id))
                elif isinstance(ev, h2.events.StreamReset):
                    s = self.streams.get(ev.stream_id)
                    if s is not None:
                        s["reset"] = True
                    self.window.set()
                elif isinstance(ev, (h2.events.WindowUpdated, h2.events.RemoteSettingsChanged)):
                    self.window.set()
                elif isinstance(ev, h2.events.ConnectionTerminated):
                    self.flush()
                    self.closed = True
            self.flush()
            if self.closed:
                break
        self.closed = True
        self.window.set()

    async def respond(self, sid):
        s = self.streams[sid]
        h = dict(s["headers"])
        method, path = h.get(":method", ""), h.get(":path", "")
        record(method, path, s["headers"], s["body"], self.cid, "2")
        r = next_response(method, path)
        if r["delay"]:
            await asyncio.sleep(r["delay"])
        try:
            if s["reset"] or self.closed:
                return
            body = r["body"]
            streamed = r["headers"].get("transfer-encoding", "").lower() == "chunked"
            headers = [(":status", str(r["status"]))]
            headers += [(k.lower(), v) for k, v in r["headers"].items()
                        if k.lower() not in ("content-length", "transfer-encoding")]
            if not streamed:
                headers.append(("content-length", str(len(body))))
            self.conn.send_headers(sid, headers, end_stream=not body)
            self.flush()
            offset = 0
            while offset < len(body):
                if s["reset"] or self.closed:
                    return
                size = min(self.conn.local_flow_control_window(sid), self.conn.max_outbound_frame_size,
                           len(body) - offset)
                if size <= 0:
                    self.window.clear()
                    await self.window.wait()
                    continue
                self.conn.send_data(sid, body[offset:offset + size], end_stream=offset + size == len(body))
                offset += size
                self.flush()
                await self.writer.drain()
        except (h2.exceptions.StreamClosedError, h2.exceptions.ProtocolError, ConnectionError):
            pass
        finally:
            self.streams.pop(sid, None)


REASONS = {200: "OK", 201: "Created", 204: "No Content", 400: "Bad Request", 403: "Forbidden",
           404: "Not Found", 410: "Gone", 429: "Too Many Requests", 500: "Internal Server Error",
           503: "Service Unavailable"}


async def serve_h1(reader, writer, cid):
    while True:
        line = await reader.readline()
        if not line:
            return
        parts = line.decode("latin-1").strip().split()
        if len(parts) != 3:
            return
        method, path, _ = parts
        headers = []
        while True:
            hl = await reader.readline()
            if not hl or hl in (b"\r\n", b"\n"):
                break
            name, _, value = hl.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        lower = {k.lower(): v for k, v in headers}
        body = b""
        if "content-length" in lower:
            body = await reader.readexactly(int(lower["content-length"]))
        elif lower.get("transfer-encoding", "").lower() == "chunked":
            while True:
                size = int((await reader.readline()).strip().split(b";")[0], 16)
                if size == 0:
                    await reader.readline()
                    break
                body += await reader.readexactly(size)
                await reader.readline()
        record(method, path, headers, body, cid, "1.1")
        r = next_response(method, path)
        if r["delay"]:
            await asyncio.sleep(r["delay"])
        streamed = r["headers"].get("transfer-encoding", "").lower() == "chunked"
        out = "HTTP/1.1 %d %s\r\n" % (r["status"], REASONS.get(r["status"], "Status"))
        for k, v in r["headers"].items():
            if k.lower() not in ("content-length", "transfer-encoding"):
                out += "%s: %s\r\n" % (k, v)
        if streamed:
            out += "transfer-encoding: chunked\r\n\r\n"
            payload = b"".join(b"%x\r\n%s\r\n" % (len(c), c)
                               for c in (r["body"][i:i + 4096] for i in range(0, len(r["body"]), 4096)))
            writer.write(out.encode("latin-1") + payload + b"0\r\n\r\n")
        else:
            out += "content-length: %d\r\n\r\n" % len(r["body"])
            writer.write(out.encode("latin-1") + r["body"])
        await writer.drain()
        if lower.get("connection", "").lower() == "close":
            return


async def handle(reader, writer):
    with LOCK:
        STATE["connections"] += 1
        cid = STATE["connections"]
    try:
        sslobj = writer.get_extra_info("ssl_object")
        alpn = sslobj.selected_alpn_protocol() if sslobj is not None else None
        if alpn == "h2":
            await H2Session(reader, writer, cid).run()
        else:
            await serve_h1(reader, writer, cid)
    except (ConnectionError, asyncio.IncompleteReadError, ssl.SSLError, ValueError, OSError):
        pass
    finally:
        try:
            writer.close()
        except Exception:
            pass


def control():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            cmd = json.loads(line)
            op = cmd.get("cmd")
            if op == "route":
                responses = [{"status": int(r.get("status", 200)), "headers": dict(r.get("headers", {})),
                              "body": base64.b64decode(r.get("body", "")), "delay": float(r.get("delay") or 0)}
                             for r in cmd.get("responses", [])]
                with LOCK:
                    ROUTES[(cmd["prefix"], cmd.get("method"))] = {"responses": responses, "next": 0}
                emit({"ok": True})
            elif op == "requests":
                with LOCK:
                    emit({"ok": True, "requests": list(REQUESTS)})
            elif op == "reset":
                with LOCK:
                    REQUESTS.clear()
                    ROUTES.clear()
                emit({"ok": True})
            elif op == "connections":
                with LOCK:
                    emit({"ok": True, "count": STATE["connections"]})
            elif op == "stop":
                emit({"ok": True})
                os._exit(0)
            else:
                emit({"ok": False, "error": "unknown command %r" % op})
        except Exception as e:  # report, never die on a bad command
            emit({"ok": False, "error": "%s: %s" % (type(e).__name__, e)})
    os._exit(0)  # stdin closed: the owner is gone


async def main():
    directory = sys.argv[1]
    http2 = len(sys.argv) < 3 or sys.argv[2] != "http1"
    paths = make_certs(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(paths["server.pem"], paths["server.key"])
    context.set_alpn_protocols(["h2", "http/1.1"] if http2 else ["http/1.1"])
    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=context, backlog=512)
    port = server.sockets[0].getsockname()[1]
    emit({"ok": True, "port": port, "ca": paths["ca.pem"]})
    threading.Thread(target=control, daemon=True).start()
    async with server:
        await server.serve_forever()


USAGE = "usage: fake_http_server.py DIRECTORY [http2|http1]\n"

if __name__ == "__main__":
    if len(sys.argv) not in (2, 3) or not os.path.isdir(sys.argv[1]) or sys.argv[2:] not in ([], ["http2"], ["http1"]):
        sys.stderr.write(USAGE + "DIRECTORY must exist; the certificates are written into it.\n")
        sys.exit(2)
    asyncio.run(main())
