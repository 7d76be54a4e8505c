#!/usr/bin/env python3
"""Drives headless Chromium through Examples/web/index.html served by Examples/web/hub.py: the real
page, its real service worker registration, Herald's VAPID key through the hub, and the
registration with Herald; only the push service is faked (headless Chromium has none), by a
`PushManager` whose `subscribe` returns a subscription with a fresh P-256 key and auth secret made
by the browser's own WebCrypto. Then a push message is delivered to the worker over the DevTools
protocol (`ServiceWorker.deliverPushMessage`), so the worker shows it and reports `received`.

With SEND_URL, the local stream instead: once the page shows its stream connected, the notification
SEND_BODY is sent with a waiting POST to SEND_URL (SEND_TOKEN), its report is kept, and the items the
page showed from the stream (and whether it confirmed each) are read.

    WAIT_URL=… WAIT_TOKEN=… web_browser.py PAGE_URL PUSH_PAYLOAD_JSON
    SEND_URL=… SEND_TOKEN=… SEND_BODY=… web_browser.py PAGE_URL

Prints one JSON object: {"status": …, "device": {…}, "subscription": {…}, "applicationServerKey": …,
"received"?, "localStatus"?, "report"?, "shown"?}.
Exit 1 on failure. Uses websocket-client (PyPI), as pulse_browser.py does.
"""

import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pulse_browser import run_reporting  # noqa: E402

FAKE_PUSH_SERVICE = r"""
(() => {
  if (typeof PushManager === 'undefined') return;
  const b64url = (bytes) => btoa(String.fromCharCode(...new Uint8Array(bytes)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  let current = null;
  PushManager.prototype.getSubscription = async function () { return current; };
  PushManager.prototype.subscribe = async function (options) {
    const pair = await crypto.subtle.generateKey({ name: 'ECDH', namedCurve: 'P-256' }, true, ['deriveBits']);
    const p256dh = b64url(await crypto.subtle.exportKey('raw', pair.publicKey));
    const auth = b64url(crypto.getRandomValues(new Uint8Array(16)));
    const key = new Uint8Array(options.applicationServerKey).buffer;
    current = {
      endpoint: 'https://push.example.net/send/headless-1',
      options: { applicationServerKey: key, userVisibleOnly: true },
      toJSON() { return { endpoint: this.endpoint, expirationTime: null, keys: { p256dh, auth } }; },
      async unsubscribe() { current = null; return true; },
    };
    window.__fakeSubscription = { applicationServerKey: b64url(key), p256dh, auth };
    return current;
  };
})();
"""


SHOWN = ("[...document.querySelectorAll('#local li[data-confirmed]')].map((li) => "
         "({id: li.dataset.id, text: li.textContent, confirmed: li.dataset.confirmed === 'true'}))")


def local_stream(browser, result):
    """Sends SEND_BODY once the page holds its stream; the report and what the page showed."""
    result["localStatus"] = browser.wait_until(
        "(() => { const t = document.getElementById('local-status').textContent; "
        "return t.startsWith('Connected') || t.startsWith('No ') || t.startsWith('Closed') ? t : null })()",
        timeout=30)
    if not result["localStatus"].startswith("Connected"):
        return result
    request = urllib.request.Request(
        os.environ["SEND_URL"], data=os.environ["SEND_BODY"].encode(), method="POST",
        headers={"Authorization": f"Bearer {os.environ['SEND_TOKEN']}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        result["report"] = json.load(response)
    browser.wait_until(f"{SHOWN}.length > 0 ? true : null", timeout=30)
    result["shown"] = browser.evaluate(SHOWN)
    return result


def main(argv):
    url, payload = argv[0], (argv[1] if len(argv) > 1 else None)

    def work(browser):
        origin = url.split("/", 3)
        origin = origin[0] + "//" + origin[2]
        browser.command("Browser.grantPermissions", origin=origin, permissions=["notifications"])
        browser.command("Page.addScriptToEvaluateOnNewDocument", source=FAKE_PUSH_SERVICE)
        browser.command("ServiceWorker.enable")
        browser.command("Page.navigate", url=url)
        browser.wait_until("document.readyState === 'complete' && !!document.getElementById('subscribe')")
        browser.evaluate("document.getElementById('subscribe').click(); true")
        status = browser.wait_until(
            "(() => { const t = document.getElementById('status').textContent; "
            "return t.startsWith('Subscribed') || t.startsWith('Error') ? t : null })()", timeout=30)
        result = {"status": status}
        if status.startswith("Subscribed") and os.environ.get("SEND_URL"):
            result["device"] = json.loads(browser.evaluate("document.getElementById('out').value"))
            return local_stream(browser, result)
        if status.startswith("Subscribed"):
            result["device"] = json.loads(browser.evaluate("document.getElementById('out').value"))
            result["subscription"] = browser.evaluate("window.__fakeSubscription")
            # The worker the page registered, as the DevTools protocol reports it.
            registration_id = None
            deadline = time.time() + 20
            while registration_id is None and time.time() < deadline:
                for event in browser.events:
                    if event.get("method") == "ServiceWorker.workerVersionUpdated":
                        for version in event["params"].get("versions", []):
                            if version.get("runningStatus") == "running" and version.get("status") == "activated":
                                registration_id = version["registrationId"]
                if registration_id is None:
                    message = browser.receive(0.5)
                    if message is not None and "method" in message:
                        browser.events.append(message)
            if registration_id is None:
                raise RuntimeError("the page's service worker never ran")
            browser.command("ServiceWorker.deliverPushMessage", origin=origin, registrationId=registration_id,
                            data=payload)
            result["pushed"] = True
            # WAIT_URL (Herald's GET /v1/notifications/{id}, with WAIT_TOKEN): until the worker's report is in.
            wait_url = os.environ.get("WAIT_URL")
            if wait_url:
                request = urllib.request.Request(wait_url, headers={"Authorization": f"Bearer {os.environ['WAIT_TOKEN']}"})
                deadline, received = time.time() + 30, False
                while not received and time.time() < deadline:
                    with urllib.request.urlopen(request, timeout=10) as response:
                        received = any(e.get("kind") == "received" for e in json.load(response).get("events", []))
                    if not received:
                        time.sleep(0.2)
                result["received"] = received
        return result

    return run_reporting(work)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
