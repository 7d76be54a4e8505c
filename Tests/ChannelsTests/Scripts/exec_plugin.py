#!/usr/bin/env python3
"""A test plugin for the exec channel (protocol 1). Usage: exec_plugin.py MODE.

Modes: ok (every target delivered), die (SIGKILL itself on a batch holding a first attempt),
garbage (refusable lines around a valid answer), silent (never answers deliver), secrets
(declares secretFields [appToken], echoes device and config secrets to stderr and in reasons),
wrong-platform (declares platform "other"), crash-start (exits before the handshake answer).
"""
import json
import os
import signal
import sys

mode = sys.argv[1] if len(sys.argv) > 1 else "ok"


def send(obj):
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


config = {}
for line in sys.stdin:
    req = json.loads(line)
    method, rid = req.get("method"), req.get("id")
    if method == "handshake":
        if mode == "crash-start":
            sys.exit(3)
        config = req.get("config") or {}
        name = "other" if mode == "wrong-platform" else "gotify"
        send({"id": rid, "result": {
            "protocol": 1,
            "platforms": [{"name": name, "secretFields": ["appToken"]}],
            "configKeys": ["server", "password", "hidden"], "secretConfigKeys": ["hidden"]}})
    elif method == "shutdown":
        send({"id": rid, "result": {}})
        break
    elif method == "validate":
        dev = req["device"]
        if "appToken" not in dev:
            send({"id": rid, "error": {"field": "appToken", "message": "required"}})
        else:
            send({"id": rid, "result": {"device": dev}})
    elif method == "deliver":
        targets = req["targets"]
        if mode == "silent":
            continue
        if mode == "die" and any(t["attempt"] == 1 for t in targets):
            os.kill(os.getpid(), signal.SIGKILL)
        results = [{"deliveryId": t["deliveryId"], "outcome": "delivered", "status": 200} for t in targets]
        if mode == "garbage" and len(targets) > 1:
            sys.stdout.write("this is not json\n")
            sys.stdout.write("[1, 2]\n")
            send({"id": 99999, "result": {"results": []}})
            results.append({"deliveryId": "not-in-batch", "outcome": "delivered"})
            results.append({"deliveryId": targets[0]["deliveryId"], "outcome": "failed", "reason": "dup"})
            results.append({"deliveryId": targets[-1]["deliveryId"], "outcome": "maybe"})
            results = [r for r in results if r["deliveryId"] != targets[-1]["deliveryId"] or r["outcome"] == "maybe"]
        if mode == "secrets":
            for t in targets:
                token = (t.get("device") or {}).get("appToken", "")
                print(f"posting with appToken={token} password={config.get('password')} hidden={config.get('hidden')}",
                      file=sys.stderr, flush=True)
            results = [{"deliveryId": t["deliveryId"], "outcome": "failed", "status": 401,
                        "reason": "bad token " + (t.get("device") or {}).get("appToken", "") + " / " +
                                  str(config.get("hidden"))} for t in targets]
        send({"id": rid, "result": {"results": results}})
