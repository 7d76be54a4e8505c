#!/usr/bin/env python3
"""Drives the Herald console in headless Chromium over the DevTools protocol.

Started by Tests/ConsoleTests/ConsoleBrowserTests.swift against a real `herald serve`. It only
observes: it signs in, sends one notification through the API (as a hub would), clicks through
the page, takes screenshots and measures the layout, then prints one JSON object of what it saw
on stdout. The Swift test makes the assertions.

usage: console_driver.py --base URL --good TOKEN --bad TOKEN --noread TOKEN --send TOKEN --out DIR
(--good: read + devices; --noread: events only, also used to record a lifecycle event)
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket  # websocket-client


class CDP:
    def __init__(self, url):
        # Chromium refuses DevTools connections that carry an Origin it was not told to allow.
        self.ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        mid = self.next_id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def js(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in r:
            raise RuntimeError(f"script failed: {r['exceptionDetails'].get('text')} in {expression[:80]}")
        return r["result"].get("value")

    def wait(self, expression, timeout=20.0, what=None):
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out waiting for {what or expression}")
            time.sleep(0.05)


def start_chromium(profile):
    exe = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    args = [exe, "--headless=new", "--disable-gpu", "--no-first-run", "--no-default-browser-check",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-extensions", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
            "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"]
    if os.geteuid() == 0:
        args.insert(1, "--no-sandbox")
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + 30
    while not os.path.exists(port_file) or os.path.getsize(port_file) == 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("chromium did not start")
        time.sleep(0.05)
    port = int(open(port_file).read().split()[0])
    deadline = time.monotonic() + 10
    while True:
        try:
            targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5))
            pages = [t for t in targets if t.get("type") == "page"]
            if pages:
                return proc, pages[0]["webSocketDebuggerUrl"]
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("no page target")
        time.sleep(0.05)


def post(base, path, token, body):
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as res:
        return res.status, json.load(res)


def get(base, path, token):
    req = urllib.request.Request(base + path, headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=10) as res:
        return res.status, json.load(res)


def send_notification(base, token, body):
    req = urllib.request.Request(base + "/v1/notifications", data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as res:
        return res.status, json.load(res)


def wait_for_server(base, timeout=20.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as res:
                if res.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("herald serve did not answer /healthz")
        time.sleep(0.05)


def console_headers(base):
    with urllib.request.urlopen(base + "/console", timeout=5) as res:
        return {"status": res.status, "contentType": res.headers.get("Content-Type"),
                "csp": res.headers.get("Content-Security-Policy")}


def viewport(cdp, width, height, mobile):
    cdp.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=mobile)
    cdp.js("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def screenshot(cdp, path):
    data = cdp.call("Page.captureScreenshot", format="png", captureBeyondViewport=False)["data"]
    with open(path, "wb") as f:
        f.write(base64.b64decode(data))
    return path


OVERFLOW = """(() => {
  const w = window.innerWidth;
  const bad = [];
  for (const el of document.querySelectorAll('body *')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.right > w + 0.5 || r.left < -0.5) bad.push((el.id ? '#' + el.id : el.tagName.toLowerCase()) + ' ' + Math.round(r.left) + '..' + Math.round(r.right));
  }
  return {innerWidth: w, scrollWidth: document.documentElement.scrollWidth, bodyScrollWidth: document.body.scrollWidth, offenders: bad.slice(0, 20)};
})()"""


FOCUSED = "(() => { const e = document.activeElement; return !e || e === document.body ? 'body' : (e.id || e.textContent.trim().slice(0, 40)); })()"


def key(cdp, name, code, vk, text=None):
    down = {"text": text} if text else {}
    cdp.call("Input.dispatchKeyEvent", type="keyDown", key=name, code=code, windowsVirtualKeyCode=vk, **down)
    cdp.call("Input.dispatchKeyEvent", type="keyUp", key=name, code=code, windowsVirtualKeyCode=vk)


def sign_in(cdp, token):
    cdp.js(f"""(() => {{ const t = document.getElementById('token'); t.value = {json.dumps(token)};
        document.getElementById('signin-form').requestSubmit(); return true; }})()""")


def main():
    ap = argparse.ArgumentParser()
    for name in ("base", "good", "bad", "noread", "send", "out"):
        ap.add_argument("--" + name, required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    seen = {"steps": []}
    profile = tempfile.mkdtemp(prefix="herald-chromium-")
    proc = None
    cdp = None
    try:
        proc, ws_url = start_chromium(profile)
        cdp = CDP(ws_url)
        wait_for_server(a.base)
        seen["consoleResponse"] = console_headers(a.base)
        cdp.call("Network.enable")
        cdp.call("Page.enable")
        cdp.call("Runtime.enable")
        viewport(cdp, 1280, 800, False)
        cdp.call("Page.navigate", url=a.base + "/console")
        cdp.wait("document.readyState === 'complete' && !!document.getElementById('signin-form')", what="the page")
        seen["steps"].append("loaded")

        # Sign-in: an unknown token, then a token without `read`, then a good one.
        sign_in(cdp, a.bad)
        seen["badTokenError"] = cdp.wait(
            "(() => { const e = document.getElementById('signin-error'); return !e.hidden && e.textContent; })()",
            what="the bad-token error")
        seen["appHiddenAfterBad"] = cdp.js("document.getElementById('app').hidden")
        sign_in(cdp, a.noread)
        seen["noReadError"] = cdp.wait(
            "(() => { const e = document.getElementById('signin-error'); return !e.hidden && e.textContent.includes('403') && e.textContent; })()",
            what="the no-read error")
        sign_in(cdp, a.good)
        cdp.wait("document.querySelectorAll('#channels tbody tr').length > 0", what="the overview")
        seen["channelNames"] = cdp.js("[...document.querySelectorAll('#channels tbody tr')].map(r => r.dataset.channel)")
        seen["channelTypes"] = cdp.js("[...document.querySelectorAll('#channels tbody tr')].map(r => r.children[1].textContent)")
        seen["chartSVG"] = cdp.js("!!document.querySelector('#chart svg[role=img]')")
        seen["who"] = cdp.js("document.getElementById('who').textContent")
        seen["tokenInStorage"] = cdp.js(f"sessionStorage.getItem('herald.console.token') === {json.dumps(a.good)}")
        seen["locationAfterSignIn"] = cdp.js("location.href")
        seen["steps"].append("signed in")

        # Keyboard: Tab reaches every control of the navigation; Enter on "Routes" opens it.
        cdp.js("document.activeElement && document.activeElement.blur(); true")
        focused = []
        for _ in range(12):
            key(cdp, "Tab", "Tab", 9)
            focused.append(cdp.js(FOCUSED))
            if focused[-1] == "Routes":
                break
        key(cdp, "Enter", "Enter", 13, text="\r")
        seen["focusOrder"] = focused
        seen["hashAfterEnter"] = cdp.wait("location.hash === '#routes' && location.hash", timeout=5, what="Enter on Routes")
        cdp.js("location.hash = '#overview'; true")
        key(cdp, "Tab", "Tab", 9)
        rest = []
        for _ in range(6):
            rest.append(cdp.js(FOCUSED))
            key(cdp, "Tab", "Tab", 9)
        seen["focusAfterRoutes"] = rest

        # A live delivery: the list updates from the event stream, without a reload.
        cdp.js("window.__noReload = 'still here'; location.hash = '#notifications'; true")
        cdp.wait("document.getElementById('live').textContent === 'live'", what="the event stream")
        nid = "console-live-" + str(int(time.time() * 1000))
        status, report = send_notification(a.base, a.send, {
            "id": nid, "namespace": "default", "type": "door", "title": "Front door open"})
        seen["sendStatus"] = status
        seen["sentId"] = nid
        seen["liveRowOutcomes"] = cdp.wait(
            f"""(() => {{ const r = document.querySelector('#notifications tr[data-id={json.dumps(nid)}]');
                const t = r && r.querySelector('.outcomes').textContent;
                return t && t.includes('delivered') && t.includes('suppressed') && t; }})()""",
            what="the live row")
        seen["noReload"] = cdp.js("window.__noReload === 'still here'")
        seen["steps"].append("live")

        # Detail view: every planned delivery, and the rule that suppressed step 2.
        cdp.js(f"document.querySelector('#notifications tr[data-id={json.dumps(nid)}] button').click(); true")
        cdp.wait("!document.getElementById('view-detail').hidden && document.querySelectorAll('#deliveries tbody tr[data-delivery]').length > 0",
                 what="the detail view")
        seen["detailRows"] = cdp.js("""[...document.querySelectorAll('#deliveries tbody tr[data-delivery]')].map(r => ({
            channel: r.children[1].textContent, outcome: r.querySelector('.outcome').textContent,
            attempts: r.children[4].textContent, suppressedBy: r.querySelector('.suppressed-by').textContent }))""")
        seen["timeline"] = cdp.js("[...document.querySelectorAll('#timeline li')].map(l => l.textContent)")
        # A lifecycle event recorded by the app shows up on the open timeline (event stream).
        seen["eventStatus"] = post(a.base, f"/v1/notifications/{nid}/events", a.noread,
                                   {"kind": "action", "action": "approve", "deviceId": "pixel"})[0]
        seen["timelineAfterEvent"] = cdp.wait(
            "(() => { const l = document.querySelector('#timeline li[data-kind=action]'); return l && l.textContent; })()",
            what="the action on the timeline")
        seen["steps"].append("detail")

        # Routes: the graph as SVG, and explain.
        cdp.js("location.hash = '#routes'; true")
        cdp.wait("document.querySelectorAll('#graphs figure.graph svg').length > 0", what="the route graphs")
        seen["graphs"] = cdp.js("""[...document.querySelectorAll('#graphs figure.graph')].map(f => ({
            route: f.dataset.route, text: [...f.querySelectorAll('svg text')].map(t => t.textContent) }))""")
        cdp.js("""(() => { document.getElementById('explain-input').value = JSON.stringify(
            {namespace: 'default', type: 'door', title: 'Explain me'});
            document.getElementById('explain-form').requestSubmit(); return true; })()""")
        cdp.wait("document.querySelectorAll('#plan .step').length > 0", what="the plan")
        seen["planText"] = cdp.js("document.getElementById('plan').textContent")
        seen["planSteps"] = cdp.js("document.querySelectorAll('#plan .step').length")
        seen["steps"].append("explain")

        # Back on the overview: the summary counts the delivery (through the event log). Then the
        # screenshots, and the layout at 360 px.
        cdp.js("location.hash = '#overview'; true")
        cdp.wait("document.getElementById('hour-delivered').textContent === '1'", what="the overview's counts")
        seen["overviewAfterSend"] = cdp.js("""Object.fromEntries([...document.querySelectorAll('#channels tbody tr')].map(r =>
            [r.dataset.channel, [...r.querySelectorAll('td.num')].map(td => Number(td.textContent))]))""")
        seen["chartBars"] = cdp.js("document.querySelectorAll('#chart svg rect').length")
        seen["desktopScreenshot"] = screenshot(cdp, os.path.join(a.out, "overview-1280x800.png"))
        viewport(cdp, 360, 740, True)
        seen["phoneLayout"] = cdp.js(OVERFLOW)
        seen["phoneScreenshot"] = screenshot(cdp, os.path.join(a.out, "overview-360x740.png"))
        viewport(cdp, 1280, 800, False)
        seen["steps"].append("screenshots")

        # Devices: listed with platform and channels, secrets never shown; removal asks first.
        device_secret = "fcm-secret-registration-token-" + str(int(time.time()))
        seen["registerStatus"] = post(a.base, "/v1/devices", a.good,
                                      {"deviceId": "pixel", "platform": "phone", "token": device_secret})[0]
        cdp.js("location.hash = '#devices'; true")
        cdp.wait("!!document.querySelector('#devices tr[data-device=pixel]')", what="the device list")
        seen["deviceRow"] = cdp.js("document.querySelector('#devices tr[data-device=pixel]').textContent")
        seen["secretOnPage"] = cdp.js(f"document.body.innerText.includes({json.dumps(device_secret)})")
        cdp.js("document.querySelector('#devices tr[data-device=pixel] button.danger').click(); true")
        seen["confirmShown"] = cdp.wait(
            "(() => { const b = document.querySelector('#devices tr[data-device=pixel] button.confirm'); return b && b.textContent; })()",
            what="the confirmation")
        seen["stillListedBeforeConfirm"] = len(get(a.base, "/v1/devices?namespace=default", a.good)[1]["devices"])
        cdp.js("document.querySelector('#devices tr[data-device=pixel] button.confirm').click(); true")
        cdp.wait("!document.querySelector('#devices tr[data-device=pixel]')", what="the removal")
        seen["devicesAfterRemove"] = len(get(a.base, "/v1/devices?namespace=default", a.good)[1]["devices"])
        seen["steps"].append("devices")

        # Every request the page made (DevTools network events).
        cdp.js("true")  # flush pending events
        seen["requests"] = [e["params"]["request"]["url"] for e in cdp.events
                            if e.get("method") == "Network.requestWillBeSent"]
        seen["ok"] = True
    except Exception as e:  # reported to the Swift test, which fails with it
        seen["ok"] = False
        seen["error"] = f"{type(e).__name__}: {e}"
        try:  # what the page showed, for the failure message
            seen["error"] += " · page: " + cdp.js(
                "[location.hash, document.getElementById('app-error').textContent, "
                "document.getElementById('signin-error').textContent, document.getElementById('live').textContent].join(' | ')")
        except Exception:
            pass
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        shutil.rmtree(profile, ignore_errors=True)
    json.dump(seen, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
