#!/usr/bin/env python3
"""Drives headless Chromium over the DevTools protocol through the Pulse site kit's authorize flow
(guide 二.2): open {authorize}#fragment, log in on the site, come back, allow (or deny), and report
where the page sent the browser (pulserelay://site-connected?...).

    pulse_browser.py URL_WITH_FRAGMENT USER PASSWORD allow|deny

Prints one JSON object: {"redirect": …, "afterLoad": {...}, "afterLogin": {...}}. Exit 1 on failure.
Uses websocket-client (PyPI). Chromium runs as root only with --no-sandbox, a browser sandbox flag.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")


class Browser:
    def __init__(self):
        self.profile = tempfile.mkdtemp(prefix="pulse-browser-")
        args = [CHROMIUM, "--headless=new", "--remote-debugging-port=0", f"--user-data-dir={self.profile}",
                "--no-first-run", "--no-default-browser-check", "--disable-gpu", "--disable-extensions",
                "about:blank"]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.time() + 30
        while time.time() < deadline:
            if os.path.exists(port_file):
                text = open(port_file).read().split()
                if text:
                    break
            time.sleep(0.05)
        else:
            raise RuntimeError("chromium did not open its DevTools port")
        port = text[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
        page = next(t for t in targets if t["type"] == "page")
        self.ws = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30, suppress_origin=True)
        self.next_id = 0
        self.events = []
        self.command("Page.enable")
        self.command("Runtime.enable")

    def close(self):
        try:
            self.ws.close()
        finally:
            self.process.kill()
            self.process.wait()
            shutil.rmtree(self.profile, ignore_errors=True)

    def receive(self, timeout):
        self.ws.settimeout(timeout)
        try:
            return json.loads(self.ws.recv())
        except websocket.WebSocketTimeoutException:
            return None

    def command(self, method, **params):
        self.next_id += 1
        wanted = self.next_id
        self.ws.send(json.dumps({"id": wanted, "method": method, "params": params}))
        deadline = time.time() + 30
        while time.time() < deadline:
            message = self.receive(1)
            if message is None:
                continue
            if message.get("id") == wanted:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)
        raise RuntimeError(f"{method}: no answer")

    def evaluate(self, expression):
        result = self.command("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_until(self, expression, timeout=20):
        """Polls a page expression until it is truthy (page loads and redirects settle)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                value = self.evaluate(expression)
                if value:
                    return value
            except RuntimeError:
                pass  # the page was navigating
            time.sleep(0.1)
        raise RuntimeError(f"timed out waiting for {expression}")

    def wait_for_navigation_to(self, prefix, timeout=20):
        """The URL of the first navigation the page requested to `prefix` (an app scheme the browser
        cannot open, so it is read from Page.frameRequestedNavigation)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            for event in self.events:
                if event.get("method") == "Page.frameRequestedNavigation":
                    url = event["params"].get("url", "")
                    if url.startswith(prefix):
                        return url
            message = self.receive(0.5)
            if message is not None and "method" in message:
                self.events.append(message)
        raise RuntimeError(f"no navigation to {prefix}")


STATE = """JSON.stringify({
  path: location.pathname, hash: location.hash, ready: document.readyState,
  loginShown: !!document.getElementById('login') && !document.getElementById('login').hidden,
  askShown: !!document.getElementById('ask') && !document.getElementById('ask').hidden,
  device: (document.getElementById('device') || {}).textContent || null,
  stored: sessionStorage.getItem('pulse-relay-connect') !== null,
  status: (document.getElementById('status') || {}).textContent || ''
})"""


def run_reporting(work):
    """Runs ``work(browser)`` in a fresh headless Chromium and prints its result, or
    ``{"error": …}``, as one JSON line for the Swift test. Returns the exit status."""
    browser = Browser()
    try:
        print(json.dumps(work(browser)))
        return 0
    except Exception as error:  # report anything as one line for the Swift test
        print(json.dumps({"error": str(error)}))
        return 1
    finally:
        browser.close()


def main(argv):
    url, user, password, choice = argv

    def work(browser):
        browser.command("Page.navigate", url=url)
        browser.wait_until("document.readyState === 'complete' && location.pathname === '/pulse-relay/authorize'")
        after_load = json.loads(browser.wait_until(
            f"(() => {{ const s = {STATE}; return JSON.parse(s).loginShown || JSON.parse(s).askShown ? s : null }})()"))

        after_login = None
        if after_load["loginShown"]:
            browser.evaluate("document.getElementById('login-link').click()")
            browser.wait_until("location.pathname === '/login' && document.readyState === 'complete'")
            browser.evaluate(
                f"""(() => {{
                  document.querySelector('input[name=username]').value = {json.dumps(user)};
                  document.querySelector('input[name=password]').value = {json.dumps(password)};
                  document.getElementById('submit').click(); return true; }})()""")
            browser.wait_until("document.readyState === 'complete' && location.pathname === '/pulse-relay/authorize'")
            after_login = json.loads(browser.wait_until(
                f"(() => {{ const s = {STATE}; return JSON.parse(s).askShown ? s : null }})()"))

        browser.events.clear()
        browser.evaluate(f"document.getElementById({json.dumps(choice)}).click(); true")
        redirect = browser.wait_for_navigation_to("pulserelay://")
        return {"redirect": redirect, "afterLoad": after_load, "afterLogin": after_login}

    return run_reporting(work)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
