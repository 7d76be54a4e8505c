#!/usr/bin/env bash
# A local nginx HTTP/2-over-TLS sink for HTTP benchmarks.
#
#   scripts/bench/sink.sh start [DIR]   # prints "PORT CAFILE"; DIR defaults to a new temp dir (printed to stderr)
#   scripts/bench/sink.sh stop DIR
#
# DIR holds everything: generated CA + server certificate (SAN IP:127.0.0.1, DNS:localhost), nginx.conf,
# pid file, logs, temp paths. Nothing outside DIR is touched, so it is safe to run as root.
# Built-in locations (POST bodies are read completely before answering; see the comment in the config):
#   /3/device/      200 with an apns-id header            (APNs)
#   /v1/projects/   200 {"name":"projects/p/messages/1"}  (FCM)
#   /push/          201 with a location header            (Web Push)
#   /               200 {"ok":true}
# Later benches add locations by dropping *.conf files into DIR/locations.d/ before `start`, or by setting
# SINK_EXTRA_LOCATIONS to a file whose contents are copied there. To answer a POST after its body has been
# read, use the same pattern: `location /x/ { error_page 404 =200 @x; }  location @x { return 200 '...'; }`.
set -euo pipefail

cmd=${1:-}
case "$cmd" in
start)
    dir=${2:-$(mktemp -d /tmp/herald-sink.XXXXXX)}
    mkdir -p "$dir/locations.d" "$dir/tmp" "$dir/www"
    chmod 755 "$dir"
    if [[ -n "${SINK_EXTRA_LOCATIONS:-}" ]]; then cp "$SINK_EXTRA_LOCATIONS" "$dir/locations.d/extra.conf"; fi
    (
        cd "$dir"
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
            -subj /CN=herald-bench-ca -keyout ca.key -out ca.pem \
            -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=localhost \
            -keyout server.key -out server.csr 2>/dev/null
        printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' \
            >server.ext
        openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -out server.pem \
            -extfile server.ext 2>/dev/null
    )
    port=${SINK_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')}
    cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $dir/tmp/body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    default_type application/json;
    server {
        listen 127.0.0.1:$port ssl http2 backlog=1024;
        ssl_certificate $dir/server.pem;
        ssl_certificate_key $dir/server.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        http2_max_concurrent_streams 1000;
        keepalive_requests 100000000;
        keepalive_timeout 300s;
        client_body_buffer_size 64k;
        client_max_body_size 1m;
        # nginx answers a 'return' before the request body has arrived and then resets the stream, which
        # libcurl reports as an HTTP/2 stream error. The mirror module with mirror_request_body reads the
        # whole body first; the static handler then finds no file (404) and error_page turns that into
        # the canned answer of a named location.
        mirror /_drain;
        mirror_request_body on;
        log_subrequest off;
        log_not_found off;
        root $dir/www;
        location = /_drain { internal; return 204; }
        location /3/device/ { error_page 404 =200 @apns; }
        location @apns { add_header apns-id "00000000-0000-0000-0000-000000000001" always; return 200 ''; }
        location /v1/projects/ { error_page 404 =200 @fcm; }
        location @fcm { return 200 '{"name":"projects/p/messages/1"}'; }
        location /push/ { error_page 404 =201 @webpush; }
        location @webpush { add_header location "https://127.0.0.1:$port/m/1" always; return 201 ''; }
        include $dir/locations.d/*.conf;
        location / { error_page 404 =200 @ok; }
        location @ok { return 200 '{"ok":true}'; }
    }
}
CONF
    nginx -p "$dir" -c "$dir/nginx.conf"
    for _ in $(seq 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
        sleep 0.05
    done
    echo "sink dir: $dir" >&2
    echo "$port $dir/ca.pem"
    ;;
stop)
    dir=${2:?usage: sink.sh stop DIR}
    if [[ -f "$dir/nginx.pid" ]]; then
        pid=$(cat "$dir/nginx.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    fi
    rm -rf "$dir"
    ;;
*)
    echo "usage: $0 start [DIR] | stop DIR" >&2
    exit 2
    ;;
esac
