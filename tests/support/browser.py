"""Open a page in real headless Chromium and see what a person would: console errors, the
DOM, and pixels.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: requests
on fd 3, answers on fd 4, each a JSON message ended by a NUL byte), so no websocket library
and no network port are needed. The page is loaded with the network switched off: a report
that tries to fetch anything fails its load and shows up in the errors.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

TIMEOUT_S = 60


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@dataclass
class Page:
    errors: list[str] = field(default_factory=list)     # console errors, exceptions, failed loads
    found: object = None       # what the page script returned; each of its "charts" gains "png"


class Browser:
    """One headless Chromium with one page target, spoken to over the pipe."""

    def __init__(self, width: int = 1280, height: int = 900):
        exe = chromium()
        if exe is None:
            raise FileNotFoundError("chromium is not installed (scripts/setup.sh installs it)")
        self._profile = tempfile.mkdtemp(prefix="iowitness-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def fds():  # in the child: its fd 3 reads our requests, its fd 4 writes its answers
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--hide-scrollbars",
             f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            # 3 and 4 too: the fds the child dup2s to must survive its closing of the others
            preexec_fn=fds, pass_fds=(to_browser_r, from_browser_w, 3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict] = []

    def close(self) -> None:
        try:
            self.proc.terminate()
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        finally:
            for fd in (self._to_browser, self._from_browser):
                try:
                    os.close(fd)
                except OSError:
                    pass
            if self.proc.stderr:
                self.proc.stderr.close()
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # the protocol

    def _read_message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not answer in time")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise ConnectionError("chromium closed its DevTools pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(raw)

    def send(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def wait_for(self, method: str, session: str) -> dict:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            for i, event in enumerate(self.events):
                if event.get("method") == method and event.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read_message(deadline))

    def open(self, path: Path, script: str) -> Page:
        """Load a local file offline, wait for it to load, run `script` (an expression whose value
        is returned as JSON), and take a screenshot of each box it names."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable", session=session)
        self.send("Network.emulateNetworkConditions", {"offline": True, "latency": 0, "downloadThroughput": -1,
                                                       "uploadThroughput": -1}, session=session)
        self.send("Page.navigate", {"url": path.resolve().as_uri()}, session=session)
        self.wait_for("Page.loadEventFired", session)
        found = self.send("Runtime.evaluate", {"expression": f"JSON.stringify({script})", "returnByValue": True},
                          session=session)["result"].get("value")
        page = Page(found=json.loads(found) if found else None)
        # each box the script named (its "charts" and "controls": x, y, width, height in CSS
        # pixels), shot alone:
        # a whole tall page would be one huge image
        boxes = [b for key in ("charts", "controls") for b in page.found.get(key, [])] \
            if isinstance(page.found, dict) else []
        for box in boxes:
            shot = self.send("Page.captureScreenshot", {
                "format": "png", "captureBeyondViewport": True,
                "clip": {"x": box["x"], "y": box["y"], "width": max(1, box["width"]),
                         "height": max(1, box["height"]), "scale": 1}}, session=session)
            box["png"] = base64.b64decode(shot["data"])
        for event in self.events:
            if event.get("sessionId") != session:
                continue
            params = event.get("params", {})
            if event.get("method") == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                page.errors.append("console: " + " ".join(str(a.get("value", a.get("description")))
                                                          for a in params.get("args", [])))
            elif event.get("method") == "Runtime.exceptionThrown":
                page.errors.append("exception: " + params["exceptionDetails"].get("text", ""))
            elif event.get("method") == "Log.entryAdded" and params["entry"].get("level") == "error":
                page.errors.append("log: " + params["entry"].get("text", ""))
            elif event.get("method") == "Network.loadingFailed":
                page.errors.append("load failed: " + params.get("errorText", ""))
            elif event.get("method") == "Network.requestWillBeSent" \
                    and not params["request"]["url"].startswith(("file:", "data:", "about:")):
                page.errors.append("network request: " + params["request"]["url"])
        return page


def ink(png: bytes) -> float:
    """The share of a screenshot's pixels that are not near-white: 0 for a blank box."""
    from PIL import Image

    histogram = Image.open(io.BytesIO(png)).convert("L").histogram()
    return sum(histogram[:235]) / max(1, sum(histogram))


def cannot_run() -> str | None:
    """Why headless Chromium cannot run here, or None when it answers over its pipe."""
    if chromium() is None:
        return "chromium is not installed (scripts/setup.sh installs Debian's chromium)"
    try:
        with Browser() as b:
            b.send("Browser.getVersion")
    except (OSError, ConnectionError, TimeoutError) as exc:
        return f"chromium cannot be run here: {exc}"
    return None


def open_page(path: Path, script: str) -> Page:
    """The page as Chromium shows it; the calling test is skipped (with the reason) only when
    Chromium cannot run at all."""
    import pytest

    reason = cannot_run()
    if reason:
        pytest.skip(reason)
    with Browser() as b:
        return b.open(path, script)
