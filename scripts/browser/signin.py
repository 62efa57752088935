#!/usr/bin/env python3
"""Sign in on Glewlwyd's own login page in headless Chromium, like a user would.

    scripts/browser/signin.py URL [--username alice --password alice-password]
                              [--timeout 30] [--screenshot-dir DIR]

URL is an authorization URL (response_type=code, with a loopback redirect_uri).
The script opens it, logs in, grants consent if asked, presses Continue, and
waits until the browser has loaded the redirect URI's origin
(http://127.0.0.1:PORT: the loopback listener of the app under test).

Exit 0: redirected and the listener's page loaded; the final URL's path and
the page's text length go to stderr (never the code or the query).
Exit 1: anything else; a screenshot and the page source are saved in
--screenshot-dir (default: a new temporary directory) and the message says where.
Exit 2: usage error.

Uses Debian's /usr/bin/chromium and /usr/bin/chromedriver (packages chromium,
chromium-driver) and Selenium from PyPI; never downloads a browser or driver.
Chromium resolves no host names except 127.0.0.1 (loopback only).
Install: scripts/install-browser-test-deps.sh
"""

import argparse
import os
import shutil
import sys
import tempfile
import time
import urllib.parse

PROG = "signin.py"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_PYTHON = os.path.join(REPO_ROOT, ".build", "browser-venv", "bin", "python")
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


def reexec_in_venv():
    """Run under .build/browser-venv's Python when that venv exists (it has Selenium)."""
    if not os.path.exists(VENV_PYTHON):
        return
    venv = os.path.dirname(os.path.dirname(VENV_PYTHON))
    if os.path.realpath(sys.prefix) == os.path.realpath(venv):
        return
    os.execv(VENV_PYTHON, [VENV_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])


reexec_in_venv()
# Selenium Manager must never fetch anything (we give it the driver path anyway).
os.environ.setdefault("SE_OFFLINE", "true")
try:
    from selenium import webdriver
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.common.by import By
except ImportError:
    sys.stderr.write(f"{PROG}: Selenium is not installed (run: scripts/install-browser-test-deps.sh)\n")
    sys.exit(1)


class SigninError(Exception):
    pass


def log(msg):
    sys.stderr.write(f"{PROG}: {msg}\n")
    sys.stderr.flush()


def redirect_origin(url):
    """The origin (scheme://host:port) of the URL's redirect_uri parameter."""
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    redirect = query.get("redirect_uri", [""])[0]
    parts = urllib.parse.urlsplit(redirect)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SigninError("the URL has no http(s) redirect_uri parameter")
    if parts.hostname == "localhost":
        # Chromium resolves nothing but 127.0.0.1 here (--host-resolver-rules).
        raise SigninError("redirect_uri uses localhost: use http://127.0.0.1:PORT/... with this script")
    return f"{parts.scheme}://{parts.netloc}"


def start_chromium(profile_dir):
    for path in (CHROMIUM, CHROMEDRIVER):
        if not os.access(path, os.X_OK):
            raise SigninError(f"{path} not found (run: scripts/install-browser-test-deps.sh)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless=new",
        "--no-sandbox",  # needed as root; harmless otherwise
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--lang=en-US",
        f"--user-data-dir={profile_dir}",
        # Loopback only: no DNS, no proxy, no background downloads.
        "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
        "--no-proxy-server",
        "--disable-extensions",
        "--disable-component-update",
        "--disable-background-networking",
        "--disable-sync",
        "--no-first-run",
        "--no-default-browser-check",
        "--window-size=1280,1024",
    ):
        options.add_argument(flag)
    service = webdriver.ChromeService(executable_path=CHROMEDRIVER)
    return webdriver.Chrome(service=service, options=options)


def visible(driver, css):
    return [e for e in driver.find_elements(By.CSS_SELECTOR, css) if e.is_displayed()]


def sign_in(driver, url, origin, username, password, deadline):
    """Drive Glewlwyd's pages until the browser shows the redirect URI's origin."""
    driver.get(url)
    clicks = [None, None, None]  # when login, grant, continue were last clicked
    while True:
        if time.monotonic() > deadline:
            raise SigninError("timed out")
        try:
            current = driver.current_url
            at_redirect = current == origin or current.startswith(origin + "/")
            loaded = driver.execute_script("return document.readyState") == "complete"
            if loaded and driver.find_elements(By.CSS_SELECTOR, "body.neterror"):
                if at_redirect:
                    raise SigninError(f"redirected to {origin} but nothing answered there (is the listener running?)")
                raise SigninError(f"the browser could not load {url_without_query(current)}")
            if at_redirect:
                if loaded:
                    return
            else:
                step(driver, username, password, clicks)
        except WebDriverException:
            pass  # the React app re-rendered under us (stale element): look again
        time.sleep(0.1)


def recent(clicked_at, seconds=5.0):
    return clicked_at is not None and time.monotonic() - clicked_at < seconds


def step(driver, username, password, clicks):
    """One look at the page: act on whatever screen Glewlwyd shows. clicks is
    [login, grant, continue] click times, so a slow page is not clicked twice."""
    for toast in visible(driver, ".toast"):
        if toast.find_elements(By.CSS_SELECTOR, ".text-danger"):  # an error toast, e.g. wrong password
            body = toast.find_elements(By.CSS_SELECTOR, ".toast-body")
            raise SigninError("Glewlwyd says: " + " ".join((body[0] if body else toast).text.split()))
    user_field = visible(driver, "#username")
    pass_field = visible(driver, "#password")
    if user_field and pass_field and not recent(clicks[0]):
        user_field[0].clear()
        user_field[0].send_keys(username)
        pass_field[0].clear()
        pass_field[0].send_keys(password)
        driver.find_element(By.CSS_SELECTOR, "#loginbut").click()
        clicks[0] = time.monotonic()
        return
    grants = visible(driver, "input[id^='grant-']")
    if grants and not recent(clicks[1]):
        for box in grants:
            if not box.is_selected():
                box.click()
        buttons = visible(driver, "button.btn-primary")
        if buttons:
            buttons[0].click()
            clicks[1] = time.monotonic()
        return
    if not grants:
        buttons = visible(driver, "button.btn-success")
        if buttons and not recent(clicks[2]):
            buttons[0].click()
            clicks[2] = time.monotonic()


def save_evidence(driver, directory):
    """Screenshot and page source of the current page; returns what was saved."""
    saved = []
    os.makedirs(directory, exist_ok=True)
    try:
        path = os.path.join(directory, "signin-failure.png")
        if driver.save_screenshot(path):
            saved.append(path)
    except WebDriverException:
        pass
    try:
        path = os.path.join(directory, "signin-failure.html")
        with open(path, "w", encoding="utf-8") as f:
            f.write(driver.page_source)
        saved.append(path)
    except (WebDriverException, OSError):
        pass
    return saved


def url_without_query(url):
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def main():
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("url", metavar="URL", help="authorization URL to open")
    parser.add_argument("--username", default="alice")
    parser.add_argument("--password", default="alice-password")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds for the whole sign-in (default 30)")
    parser.add_argument("--screenshot-dir", help="where to save evidence on failure (default: a new temp dir)")
    args = parser.parse_args()

    started = time.monotonic()
    deadline = started + args.timeout
    driver = None
    profile_dir = tempfile.mkdtemp(prefix="signin-chromium-")
    try:
        origin = redirect_origin(args.url)
        driver = start_chromium(profile_dir)
        sign_in(driver, args.url, origin, args.username, args.password, deadline)
        text = driver.find_element(By.TAG_NAME, "body").text
        path = urllib.parse.urlsplit(driver.current_url).path or "/"
        log(f"redirected to {origin}{path}; page text {len(text)} characters; "
            f"{time.monotonic() - started:.1f} s")
        return 0
    except (SigninError, WebDriverException) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        where = ""
        if driver is not None:
            try:
                where = f" (at {url_without_query(driver.current_url)})"
            except WebDriverException:
                pass
        saved = []
        if driver is not None:
            directory = args.screenshot_dir or tempfile.mkdtemp(prefix="signin-failure-")
            saved = save_evidence(driver, directory)
        log(f"sign-in failed after {time.monotonic() - started:.1f} s: {message}{where}")
        if saved:
            log("saved " + ", ".join(saved))
        return 1
    finally:
        if driver is not None:
            try:
                driver.quit()
            except WebDriverException:
                pass
        shutil.rmtree(profile_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
