"""Headless Chromium driven over the DevTools protocol: load a page, run script in it,
take a screenshot. Only what the studio test needs."""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from _serving import free_port
from websockets.sync.client import connect

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser_path() -> str:
    """A Chromium-family browser on PATH (the tests fail, never skip, without one)."""
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError("the studio test needs a headless Chromium: apt-get install -y chromium")


class Browser:
    """One headless Chromium with one page."""

    def __init__(self) -> None:
        self.port = free_port()
        # Chromium's helper processes may still write to the profile as it is removed
        self.profile = tempfile.TemporaryDirectory(
            prefix="studio-test-", ignore_cleanup_errors=True
        )
        self.proc = subprocess.Popen(
            [
                browser_path(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--remote-debugging-port={self.port}",
                f"--user-data-dir={self.profile.name}",
                "--window-size=1400,900",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its helpers in its group: stopped with it
        )
        self._ids = itertools.count(1)
        deadline = time.monotonic() + 30
        while True:
            try:
                pages = httpx.get(f"http://127.0.0.1:{self.port}/json/list", timeout=1).json()
                page = next(p for p in pages if p.get("type") == "page")
                break
            except (httpx.HTTPError, StopIteration, ValueError):
                if time.monotonic() > deadline:
                    self.close()
                    raise RuntimeError("Chromium did not open its DevTools port") from None
                time.sleep(0.1)
        self._held = contextlib.ExitStack()
        self.ws = self._held.enter_context(
            connect(page["webSocketDebuggerUrl"], max_size=50 * 2**20)
        )

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; its result."""
        ident = next(self._ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            reply = json.loads(self.ws.recv(timeout=60))
            if reply.get("id") == ident:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]  # type: ignore[no-any-return]

    def run(self, script: str) -> Any:
        """Evaluate ``script`` in the page (awaiting a promise); its JSON value."""
        result = self.call(
            "Runtime.evaluate", expression=script, awaitPromise=True, returnByValue=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, script: str, timeout: float = 30.0) -> Any:
        """Evaluate ``script`` until it is truthy."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                value = self.run(script)
            except RuntimeError:  # the page is still loading
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"never true in the page: {script}")

    def goto(self, url: str) -> None:
        """Load a page."""
        self.call("Page.navigate", url=url)

    def screenshot(self, path: Path) -> None:
        """Save the page as a PNG."""
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        """End the browser."""
        if getattr(self, "_held", None) is not None:
            self._held.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.profile.cleanup()
