"""A small driver for headless Chromium over the DevTools protocol on a pipe
(``--remote-debugging-pipe``: commands in on fd 3, answers out on fd 4, each a JSON text ended
by a NUL byte), so a test can send real input events (wheel, drag, hover) to a page and read
its state back. Standard library only: no browser-automation package is needed."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time


class Browser:
    """One headless Chromium with one page open at ``url``, ``width`` x ``height`` CSS px."""

    def __init__(self, chromium: str, url: str, width: int = 1400, height: int = 900,
                 timeout: float = 60.0):
        cmd_r, self._cmd_w = os.pipe()
        self._out_r, out_w = os.pipe()
        self.timeout = timeout

        def fds() -> None:          # in the child: fd 3 reads commands, fd 4 writes answers
            a, b = os.dup(cmd_r), os.dup(out_w)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
             "--remote-debugging-pipe", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=fds, close_fds=False)
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._id = 0
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": target, "flatten": True})["sessionId"]
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1,
                                                         "mobile": False}, self.session)
        self.send("Page.enable", {}, self.session)
        self.send("Page.navigate", {"url": url}, self.session)
        deadline = time.monotonic() + timeout
        while self.eval("document.readyState") != "complete":
            assert time.monotonic() < deadline, "the page did not load"
            time.sleep(0.1)

    def send(self, method: str, params: dict, session: str | None = None) -> dict:
        """Send one command and return its result (events that arrive meanwhile are dropped)."""
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buf:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([self._out_r], [], [], max(0.0, left))
                assert ready, f"no answer to {method} in {self.timeout:.0f} s"
                chunk = os.read(self._out_r, 1 << 16)
                assert chunk, "Chromium closed the pipe"
                self._buf += chunk
            text, _, self._buf = self._buf.partition(b"\0")
            answer = json.loads(text)
            if answer.get("id") == self._id:
                assert "error" not in answer, answer["error"]
                return answer.get("result", {})

    def eval(self, expression: str):
        """The value of a JavaScript expression in the page."""
        result = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True}, self.session)
        return result["result"].get("value")

    def mouse(self, kind: str, x: float, y: float, **extra) -> None:
        """One real mouse event at (x, y) CSS px: mouseMoved, mousePressed, mouseReleased or
        mouseWheel (``deltaY``)."""
        self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, **extra},
                  self.session)

    def close(self) -> None:
        try:
            self.send("Browser.close", {})
        except (AssertionError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
