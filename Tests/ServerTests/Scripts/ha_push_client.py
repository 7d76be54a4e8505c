#!/usr/bin/env python3
"""Home Assistant Core's mobile_app notify platform posting to an app's push_url, written from the
seed (003: what the forwarder receives) and HA's notify code only:

  POST {push_url}  (Content-Type: application/json, no credentials)
  clear:     {"message", "title", "data", "push_token", "registration_info":
              {"app_id", "app_version", "os_version", "webhook_id"}}
  encrypted: {"encrypted": true, "encrypted_data", "push_token", "registration_info"}

HA treats 200/201/202 as sent and logs rateLimits {successful, maximum, errors, resetsAt}; otherwise
it logs the body's "message" (else "errorMessage"), and a 429 with its rateLimits as a warning.

Usage: ha_push_client.py <push_url> <push_token> <app_id> <mode> [count]
Modes: plain, encrypted, no-token, no-message, wrong-type, not-json, bad-encrypted.
Posts `count` times (default 1); prints one JSON line per post: {"status", "body", "retryAfter", "logged"},
"logged" being the line HA would log.
"""
import datetime
import json
import sys
import urllib.error
import urllib.request

# The seed's encrypted_data, verbatim.
SEED_ENCRYPTED = (
    "j6lwIesVlc+1rYltzw1iFgZZgir3QcZzs+erYXIB6TphTl6bY6xQUYYqhXQ6tGjFAWvMetre/FC89Z85OLExlm3AwX4TzEbbmpLLAoD+zuiG+"
    "FugGk756fju58ImTA+Ci5echwgyMNwehKC/RYsbS0V0YieMU34RG/2DT6SDAh++/DmktPBpealTBLnEHRx4/PuNMeqdC7kB5nfkr1gYaBBEXON0R/"
    "yLc0sR4qk42RcIyOMd2VrG1apRBSxJizhQVyBrwUWe4z8UdhlXuwLDUhBtieB/xRJSJg1B74ywGvfEtsVJVLlFii8BSsgP/wp/RlcRMLRy8ixa/"
    "WPNHLj9YSXLCNYrIvjhTwlxhjAEZncO6fHy0jOuAWbiCrWPgju2q7zWwUxtNO13rGV5pXju++sjiuGn0gKvDBsaw9ZWnVZmR50NeBVha7e4XgUP"
    "pS5+Wx78DukpCcuRU/s3N9Q4yCQHkiPtFKszEg6A5FDYb9gGnzD5aSBfKINbNDmh6oBQvN6G2HBsO8E8AdA1cOupMWEFE6b6Y7taHxgNAaX3ik1"
    "zYKGe+zDSUSv0SWqIsx8MbbgG+qkSvdNqHswvOw=="
)


def body(mode: str, token: str, app_id: str) -> bytes:
    reg = {"app_id": app_id, "app_version": "2.0.0 (68)", "os_version": "13.1.3"}
    if mode in ("encrypted", "bad-encrypted"):
        b = {"encrypted": True, "encrypted_data": SEED_ENCRYPTED if mode == "encrypted" else "%%%",
             "push_token": token, "registration_info": reg}
    else:
        reg["webhook_id"] = "0123456789abcdef"
        b = {"message": "The front door is opened", "title": "Front Door",
             "data": {"subtitle": "TwelveTwelve", "tag": "one", "image": "https://example.com/door.png",
                      "actions": [{"action": "action_one", "title": "Action 1"}], "push": {"badge": 5}},
             "push_token": token, "registration_info": reg}
        if mode == "no-token":
            del b["push_token"]
        elif mode == "no-message":
            del b["message"]
        elif mode == "wrong-type":
            b["data"] = "not an object"
    if mode == "not-json":
        return b"{not json"
    return json.dumps(b).encode()


def logged(status: int, result: dict) -> str:
    """What homeassistant/components/mobile_app/notify.py would log for this answer."""
    if status in (200, 201, 202):
        r = result.get("rateLimits")
        if r is None:
            return "sent"
        resets = datetime.datetime.fromisoformat(r["resetsAt"].replace("Z", "+00:00"))
        return "%d sent, %d allowed, %d errors, resets at %s" % (
            r["successful"], r["maximum"], r["errors"], resets.isoformat())
    message = result.get("message", "Internal server error, please try again later: "
                         + result.get("errorMessage", "Unknown error"))
    return message


def main() -> None:
    url, token, app_id, mode = sys.argv[1:5]
    count = int(sys.argv[5]) if len(sys.argv) > 5 else 1
    for _ in range(count):
        req = urllib.request.Request(url, data=body(mode, token, app_id), method="POST",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                status, raw, after = r.status, r.read(), r.headers.get("Retry-After")
        except urllib.error.HTTPError as e:
            status, raw, after = e.code, e.read(), e.headers.get("Retry-After")
        result = json.loads(raw) if raw else {}
        print(json.dumps({"status": status, "body": result, "retryAfter": after,
                          "logged": logged(status, result)}))


if __name__ == "__main__":
    main()
