"""A studio server on a free local port for the module, and one headless Chromium session shared by
the browser tests (Debian's chromium with chromium-driver; .ci/run installs them)."""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from ldpopt.studio.app import create_app

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
#: a server that has not started after this long has failed (it starts in well under a second)
START_TIMEOUT = 30.0


@dataclass
class Server:
    url: str

    def request(self, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
        """(status, body) of a GET (``body`` None) or POST to the server."""
        req = urllib.request.Request(self.url + path, data=body, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def post_json(self, path: str, payload: dict) -> tuple[int, dict]:
        status, data = self.request(path, json.dumps(payload).encode(), {"Content-Type": "application/json"})
        return status, json.loads(data)


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    config = uvicorn.Config(create_app(), host="127.0.0.1", port=0, log_level="warning")
    srv = uvicorn.Server(config)
    thread = threading.Thread(target=srv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + START_TIMEOUT
    while not srv.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the studio server did not start"
        time.sleep(0.02)
    port = srv.servers[0].sockets[0].getsockname()[1]
    yield Server(f"http://127.0.0.1:{port}")
    srv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="session")
def browser(tmp_path_factory):
    """(driver, download folder): headless Chromium through chromium-driver, never a downloaded
    browser build."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:  # a clear failure, not a skip: the browser tests are part of the suite
        pytest.fail(
            f"the studio's browser tests need Debian's chromium and chromium-driver ({', '.join(missing)} "
            "not found): apt-get install chromium chromium-driver (.ci/run does this)",
            pytrace=False,
        )
    root = tmp_path_factory.mktemp("browser")
    downloads = root / "downloads"
    downloads.mkdir()
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        f"--user-data-dir={root / 'profile'}",
        "--window-size=1280,1500",
    ):
        opts.add_argument(arg)
    opts.add_experimental_option(
        "prefs", {"download.default_directory": str(downloads), "download.prompt_for_download": False}
    )
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.execute_cdp_cmd("Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)})
    yield driver, downloads
    driver.quit()
