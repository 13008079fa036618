#!/usr/bin/env python3
"""Opens a page in headless Chromium and presses (mouse down and up at its centre) the element a CSS
selector finds, over the DevTools protocol on --remote-debugging-pipe (no Python packages needed).

usage: chromium_press.py URL SELECTOR
Prints one JSON object: {"pressed": bool, "text": the element's text, "dom": the body's HTML afterwards}.
Exits 2 when Chromium is missing, 1 when the element is not found or the page does not load.
"""
import json, os, select, shutil, subprocess, sys, tempfile, time

def main():
    url, selector = sys.argv[1], sys.argv[2]
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not browser:
        print("chromium is not installed", file=sys.stderr)
        return 2
    to_chrome_r, to_chrome_w = os.pipe()
    from_chrome_r, from_chrome_w = os.pipe()
    profile = tempfile.mkdtemp(prefix="ferry-chromium-")
    # Chromium reads commands from fd 3 and writes answers to fd 4.
    def arrange():
        os.dup2(to_chrome_r, 3)
        os.dup2(from_chrome_w, 4)
    process = subprocess.Popen(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-pipe",
         "--user-data-dir=" + profile, "about:blank"],
        preexec_fn=arrange, pass_fds=(3, 4),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(to_chrome_r)
    os.close(from_chrome_w)
    writer = os.fdopen(to_chrome_w, "wb")
    buffered = b""
    next_id = [0]
    events = []

    def receive(timeout=None):
        """The next message; None when `timeout` seconds pass without one."""
        nonlocal buffered
        deadline = None if timeout is None else time.time() + timeout
        while b"\0" not in buffered:
            if deadline is not None:
                ready, _, _ = select.select([from_chrome_r], [], [], max(0, deadline - time.time()))
                if not ready:
                    return None
            chunk = os.read(from_chrome_r, 65536)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            buffered += chunk
        message, buffered = buffered.split(b"\0", 1)
        return json.loads(message)

    def call(method, params=None, session=None):
        next_id[0] += 1
        message = {"id": next_id[0], "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        writer.write(json.dumps(message).encode() + b"\0")
        writer.flush()
        while True:
            answer = receive()
            if answer.get("id") == next_id[0]:
                if "error" in answer:
                    raise RuntimeError(method + ": " + json.dumps(answer["error"]))
                return answer.get("result", {})
            events.append(answer)

    def wait_event(name, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for event in events:
                if event.get("method") == name:
                    events.remove(event)
                    return event
            events.append(receive())
        raise RuntimeError("no " + name)

    def evaluate(session, expression):
        result = call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session)
        return result.get("result", {}).get("value")

    try:
        target = call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        call("Page.enable", {}, session)
        call("Page.navigate", {"url": url}, session)
        wait_event("Page.loadEventFired")
        box = evaluate(session, """(() => { const e = document.querySelector(%s); if (!e) return null;
            e.scrollIntoView({block: "center", inline: "center"});
            const r = e.getBoundingClientRect(); return {x: r.x + r.width / 2, y: r.y + r.height / 2, text: e.textContent}; })()"""
            % json.dumps(selector))
        if not box:
            print(json.dumps({"pressed": False, "dom": evaluate(session, "document.body.outerHTML")}))
            return 1
        call("Network.enable", {}, session)
        events.clear()
        for kind in ("mousePressed", "mouseReleased"):
            call("Input.dispatchMouseEvent", {"type": kind, "x": box["x"], "y": box["y"], "button": "left", "clickCount": 1}, session)
        # The press's request (a POST, say) must be answered before the browser closes: on a loaded
        # machine a fixed pause was too short. Without a request, 1.5 s of quiet ends the wait.
        sent, deadline, quiet = None, time.time() + 30, time.time() + 1.5
        while time.time() < deadline:
            event = events.pop(0) if events else receive(timeout=max(0.05, min(deadline, quiet) - time.time()))
            if event is None:
                if sent is None and time.time() >= quiet:
                    break
                continue
            params = event.get("params", {})
            if event.get("method") == "Network.requestWillBeSent" and params.get("request", {}).get("method") != "GET":
                sent = params.get("requestId")
            elif sent and params.get("requestId") == sent and event.get("method") in ("Network.loadingFinished", "Network.loadingFailed"):
                break
        print(json.dumps({"pressed": True, "text": box["text"], "dom": evaluate(session, "document.body.outerHTML")}))
        return 0
    finally:
        try:
            call("Browser.close")
        except Exception:
            pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
        shutil.rmtree(profile, ignore_errors=True)

if __name__ == "__main__":
    sys.exit(main())
