#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""Drive the server.metrics console in headless chromium (selenium, Debian's
chromium-driver) for test_console.sh; print what it saw as key=value lines,
which the test asserts (so every check goes through lib.sh's counters).

  console_browser.py --url URL --red CITY --action SCRIPT [--timeout S]

Loads URL, waits for the page's first refresh from /status.json, reports the
city rows and which are red; runs SCRIPT (bash: fails CITY over and asks as
it), then waits up to --timeout seconds for CITY's row to turn red and
reports its computed background; then the browser's console log (SEVERE
entries), the resources the page loaded from anywhere but its own origin,
and, last, a console.error of its own to show the log is really read.
Exit 2 when selenium or the browser cannot start (the test skips then).
"""
import argparse
import subprocess
import sys
import time
import urllib.parse


def out(key, value):
    print(f"{key}={value}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--red", required=True)
    ap.add_argument("--action", required=True)
    ap.add_argument("--timeout", type=float, default=20)
    a = ap.parse_args()
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        print(f"no selenium: {e}", file=sys.stderr)
        return 2
    opts = webdriver.ChromeOptions()
    opts.binary_location = "/usr/bin/chromium"
    # headless as root in a container; and nothing but the page: no
    # background traffic (updates, sync, safe browsing) leaves the machine
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--no-default-browser-check", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-extensions",
                "--disable-default-apps", "--no-proxy-server", "--window-size=1280,1000"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        d = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)
    except Exception as e:  # no display, no driver, a browser that does not start
        print(f"cannot start chromium: {e}", file=sys.stderr)
        return 2
    try:
        d.set_page_load_timeout(15)
        d.get(a.url)
        t0 = time.time()
        while time.time() - t0 < 15 and not d.execute_script("return document.body.dataset.loaded || ''"):
            time.sleep(0.1)
        out("loaded", 1 if d.execute_script("return document.body.dataset.loaded || ''") else 0)
        rows = d.execute_script(
            "return [...document.querySelectorAll('#cities tbody tr')].map(r => [r.dataset.city, r.className])")
        out("cities", ",".join(r[0] or "" for r in rows))
        out("red_before", ",".join(r[0] for r in rows if "alarm" in (r[1] or "").split()))
        out("lines", d.execute_script("return document.querySelectorAll('#chart polyline').length"))
        out("latency_text", d.execute_script("return document.getElementById('latency').textContent")
            .replace("\n", " "))

        act = subprocess.run(["bash", a.action], capture_output=True, text=True)
        out("action_rc", act.returncode)
        if act.returncode != 0:
            print(act.stdout + act.stderr, file=sys.stderr)
        t1 = time.time()
        red_after = -1.0
        while time.time() - t1 < a.timeout:
            cls = d.execute_script(
                "const r = document.querySelector('#cities tbody tr[data-city=\"' + arguments[0] + '\"]');"
                "return r ? r.className : null", a.red)
            if cls is not None and "alarm" in cls.split():
                red_after = time.time() - t1
                break
            time.sleep(0.2)
        out("red_after_s", f"{red_after:.1f}")
        time.sleep(3.5)  # one more refresh: the row stays red, the state column says why
        out("bg", d.execute_script(
            "const r = document.querySelector('#cities tbody tr[data-city=\"' + arguments[0] + '\"]');"
            "return r ? getComputedStyle(r).backgroundColor : ''", a.red))
        out("state", d.execute_script(
            "const r = document.querySelector('#cities tbody tr[data-city=\"' + arguments[0] + '\"]');"
            "return r ? r.lastElementChild.textContent : ''", a.red))
        rows = d.execute_script(
            "return [...document.querySelectorAll('#cities tbody tr')].map(r => [r.dataset.city, r.className])")
        out("red_end", ",".join(r[0] for r in rows if "alarm" in (r[1] or "").split()))

        origin = urllib.parse.urlsplit(a.url)
        own = f"{origin.scheme}://{origin.netloc}"
        res = d.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
        foreign = [u for u in res if not u.startswith(own + "/")]
        out("resources", len(res))
        out("foreign", len(foreign))
        for u in foreign:
            print(f"foreign resource: {u}", file=sys.stderr)
        log = d.get_log("browser")
        severe = [e for e in log if e.get("level") == "SEVERE"]
        for e in log:
            print(f"console {e.get('level')}: {e.get('message')}", file=sys.stderr)
        out("severe", len(severe))
        # the log is really read: an error of our own must show up in it
        d.execute_script("console.error('console_browser probe')")
        probe = [e for e in d.get_log("browser")
                 if e.get("level") == "SEVERE" and "console_browser probe" in e.get("message", "")]
        out("probe_seen", len(probe))
    finally:
        d.quit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
