"""The docs site end to end: built from a real ci run of the pilot paper, a paper that never ran and one whose run
failed; every internal link resolves, nothing refers outside the site, and headless Chromium loads every page from
file:// and from a local HTTP server with no failed request, no console error and the math typeset."""
import functools, http.server, json, os, re, shutil, threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import REPO, BIN, in_copy
from paperlib import cli

PILOT = "demo_paper"
ARTIFACTS = REPO / "tests" / "artifacts"

@pytest.fixture(scope="module")
def site(scratch_repo):
    """The site of the scratch repo: `demo_paper` (written by `paperlib new`, run in the ci profile), `never_run` (never
    run) and `broken` (its run raises), with this repo's library notebooks and guides."""
    r = in_copy(scratch_repo, BIN / "python", "-m", "paperlib.cli", "site", "--out", scratch_repo / "_site")
    assert r.returncode == 0, r.stdout + r.stderr
    return scratch_repo / "_site", scratch_repo / "reports"

def pages(out: Path) -> list[Path]:
    return sorted(out.rglob("*.html"))

class Refs(HTMLParser):
    "The ids and the (tag, attribute, value) references of one page."
    def __init__(self):
        super().__init__(); self.ids, self.refs = set(), []
    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v: self.ids.add(v)
            if k in ("href", "src", "srcset", "poster", "data") and v is not None: self.refs.append((tag, k, v))

@functools.lru_cache(maxsize=None)
def parse(path: Path) -> Refs:
    p = Refs(); p.feed(path.read_text(encoding="utf-8")); return p

def internal(value: str) -> bool:
    return not re.match(r"^(data:|mailto:|javascript:|#)", value) and not urlsplit(value).scheme

# ---- the pages a reader needs ------------------------------------------------------------------------

def test_pages_exist(site):
    out, _ = site
    names = {p.relative_to(out).as_posix() for p in pages(out)}
    for need in ["index.html", "guide.html", "adding_a_paper.html", f"papers/{PILOT}.html", f"papers/{PILOT}.py.html",
                 "papers/never_run.html", "papers/broken.html", "lib/00_core.html", "lib/07_runner.html", "lib/runner.py.html",
                 "lib/11_collection.html", "lib/12_render.html"]:
        assert need in names, need
    assert (out / "papers" / f"{PILOT}.ipynb").exists() and (out / "static" / "mathjax" / "tex-svg.js").exists()
    # one MathJax for the whole site, not one per page
    assert len(list(out.rglob("tex-svg.js"))) == 1
    assert not [p for p in pages(out) if re.search(r"<script>[^<]{20000,}", p.read_text())], "a page inlines a big script"

def test_home_is_the_collection(site):
    out, reports = site
    home = (out / "index.html").read_text()
    m = json.loads((reports / PILOT / "manifest.json").read_text())
    v = m["verdicts"]
    row = re.search(rf'<tr[^>]*><td><a href="papers/{PILOT}.html">.*?</tr>', home, re.S).group(0)
    for k in ("reproduced", "not reproduced", "inconclusive", "not checkable"):
        assert f'title="{k}">{v.get(k, 0)}<' in row, (k, row)
    assert m["data"]["name"] in row and "ci" in row and f'{m["runner"]["wall_s"]:.0f} s' in row
    assert re.search(r'papers/never_run.html">.*?never run', home, re.S)
    assert "the experiment broke on purpose" in home

def test_paper_page_opens_with_verdicts_data_and_claims(site):
    out, reports = site
    page = (out / "papers" / f"{PILOT}.html").read_text()
    claims = json.loads((reports / PILOT / "claims.json").read_text())["claims"]
    main = page[page.index("<main>"):]
    # title, venue and authors, the data banner, the tally, the gates and the claims come before the report body
    i_title, i_data, i_sum, i_gates, i_claims, i_report = (
        main.index("A Demo Paper"), main.index("Data: embedded default"), main.index("claims tested on this data"),
        main.index("Gates</b>"), main.index('id="claims"'), main.index('id="report"'))
    assert i_title < i_data < i_sum < i_gates < i_claims < i_report
    assert "A. Author, B. Author" in main[:i_report] and "Demo Venue 2024" in main[:i_report]
    assert "(rule: ours)" in main
    for c in claims:
        card = re.search(rf'<div class="claim-card" id="claim-{re.escape(c["id"])}">.*?</details></div>', page, re.S).group(0)
        assert c["verdict"] in card and f'href="#cell-{c["cell"]}"' in card      # the card links the cell that decided it
        assert f'id="cell-{c["cell"]}"' in page
    assert f'href="{PILOT}.ipynb" download' in page and f'href="{PILOT}.py.html"' in page
    assert "data:image/png;base64" in page          # the executed report's figures
    assert "#| export" not in page and "nbdev_export" not in page

def test_never_run_and_failed_pages_say_so(site):
    out, _ = site
    never = (out / "papers" / "never_run.html").read_text()
    assert "never been run" in never and "a^2 + b^2 = c^2" in never  # the notebook is still shown
    broken = (out / "papers" / "broken.html").read_text()
    assert "The last run failed" in broken and "the experiment broke on purpose" in broken
    assert "The failed attempt" in broken and "RuntimeError" in broken
    assert "skip_exec" not in never + broken  # the frontmatter is shown as the page head, not as a raw cell

def test_library_reference_has_prose_tests_and_api(site):
    out, _ = site
    page = (out / "lib" / "07_runner.html").read_text()
    assert 'id="api-reproduce"' in page and 'id="api-make_executor"' in page
    assert re.search(r'href="runner.py.html#L-\d+"', page)
    assert "test_eq(" in re.sub(r"<[^>]+>", "", page)  # the notebook's tests are shown (highlighted: tags between)
    assert "The batch" in page           # and its prose
    cache = (out / "lib" / "22_cache.html").read_text()
    assert 'id="api-cache_key"' in cache and "The cache key" in cache and re.search(r'href="cache.py.html#L-\d+"', cache)
    guide = (out / "guide.html").read_text()
    for p in ("ci", "smoke", "full"): assert f"<code>{p}</code>" in guide
    assert "Toy" in guide and "samples.csv" in guide and "demo_paper/" in guide and "More machines" in guide
    adding = re.sub(r"<[^>]+>", "", (out / "adding_a_paper.html").read_text())
    assert "paperlib new" in adding and "you leave alone" in adding

def test_cli_refuses_to_overwrite_the_project(capsys):
    assert cli.main(["site", "--out", str(REPO)]) == 2
    assert "refusing" in capsys.readouterr().err

def test_cli_says_reports_must_be_a_folder(capsys, tmp_path):
    (tmp_path / "claims.json").write_text("{}")
    out = tmp_path / "site"
    assert cli.main(["site", "--out", str(out), "--reports", str(tmp_path / "claims.json")]) == 2
    assert "--reports " + str(tmp_path / "claims.json") + ": a file" in capsys.readouterr().err
    assert cli.main(["site", "--out", str(out), "--reports", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err and not out.exists()

# ---- links -------------------------------------------------------------------------------------------

def test_every_internal_link_resolves(site):
    out, _ = site
    broken = []
    for page in pages(out):
        for tag, attr, value in parse(page).refs:
            if not internal(value): continue
            u = urlsplit(value)
            target = (page.parent / unquote(u.path)).resolve() if u.path else page
            if not target.exists() or not target.resolve().is_relative_to(out.resolve()):
                broken.append(f"{page.relative_to(out)}: {tag} {attr}={value}"); continue
            if u.fragment and target.suffix == ".html" and u.fragment not in parse(target).ids:
                broken.append(f"{page.relative_to(out)}: {value} (no id {u.fragment!r})")
        for tag, attr, value in parse(page).refs:  # same-page anchors
            if value.startswith("#") and len(value) > 1 and value[1:] not in parse(page).ids:
                broken.append(f"{page.relative_to(out)}: {value}")
    assert not broken, "broken links:\n" + "\n".join(broken[:30])

def test_every_page_links_to_every_other_page(site):
    out, _ = site
    everything = {p.resolve() for p in pages(out)}
    for page in pages(out):
        linked = {(page.parent / unquote(urlsplit(v).path)).resolve() for t, a, v in parse(page).refs
                  if t == "a" and internal(v) and urlsplit(v).path}
        missing = everything - linked - {page.resolve()}
        assert not missing, f"{page.relative_to(out)} does not link to {sorted(str(m.relative_to(out)) for m in missing)[:5]}"

REMOTE_CSS = re.compile(r"url\(\s*['\"]?(?:https?:)?//[^)]*\)|@import[^;]*")

def test_nothing_refers_outside_the_site(site):
    out, _ = site
    remote = []
    for page in pages(out):
        text = page.read_text()
        remote += [f"{page.relative_to(out)}: <{t} {a}={v}>" for t, a, v in parse(page).refs
                   if re.match(r"^(https?:)?//", v) and t != "a"]
        styles = re.findall(r"<style[^>]*>(.*?)</style>", text, re.S) + re.findall(r'style="([^"]*)"', text)
        remote += [f"{page.relative_to(out)}: {m}" for css in styles for m in REMOTE_CSS.findall(css)]
    for css in out.rglob("*.css"):
        remote += [f"{css.relative_to(out)}: {m}" for m in REMOTE_CSS.findall(css.read_text())]
    assert not remote, "\n".join(remote[:20])
    # the pages of this collection have no remote reference at all, not even a link out
    hits = [p.relative_to(out) for p in pages(out) if re.search(r"(src|href)=\"(https?:)?//", p.read_text())]
    assert not hits, hits

# ---- a real browser ----------------------------------------------------------------------------------

CHROMIUM, CHROMEDRIVER = shutil.which("chromium") or "/usr/bin/chromium", shutil.which("chromedriver") or "/usr/bin/chromedriver"

@pytest.fixture(scope="module")
def browser():
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        pytest.skip("headless Chromium is not installed (Debian packages chromium and chromium-driver; `make test` "
                    "installs them where apt is available): the browser checks of the docs site are skipped")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
              "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-default-apps",
              "--disable-extensions", "--window-size=1400,1000", "--allow-file-access-from-files"]:
        opts.add_argument(a)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    driver.set_page_load_timeout(120); driver.set_script_timeout(120)
    yield driver
    driver.quit()

@pytest.fixture(scope="module")
def server(site):
    out, _ = site
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a): pass
    handler = functools.partial(Quiet, directory=str(out))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()

def load(driver, url: str) -> dict:
    "Load `url`, wait for MathJax when the page has it; return its requests, failures, console errors and math counts."
    driver.get_log("performance"); driver.get_log("browser")        # drop what the previous page left
    driver.get(url)
    has_mj = driver.execute_script("return !!(window.MathJax && MathJax.startup && MathJax.startup.promise)")
    if has_mj:
        driver.execute_async_script("const done = arguments[arguments.length - 1];"
                                    "MathJax.startup.promise.then(() => done(true), e => done(String(e)));")
    requests, failed = [], []
    for entry in driver.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent": requests.append(msg["params"]["request"]["url"])
        elif msg["method"] == "Network.loadingFailed": failed.append(msg["params"])
        elif msg["method"] == "Network.responseReceived" and msg["params"]["response"].get("status", 200) >= 400:
            failed.append(msg["params"]["response"]["url"] + f' -> {msg["params"]["response"]["status"]}')
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    math = driver.execute_script("return [document.querySelectorAll('mjx-container').length,"
                                 " document.querySelectorAll('mjx-merror, [data-mjx-error]').length]")
    return dict(requests=requests, failed=failed, errors=errors, mathjax=has_mj, math=math[0], math_errors=math[1])

MATH_PAGES = [f"papers/{PILOT}.html", "papers/never_run.html", "lib/22_cache.html"]

@pytest.mark.parametrize("mode", ["file", "http"])
def test_every_page_loads_in_chromium(site, browser, server, mode):
    out, _ = site
    base = out.resolve().as_uri() if mode == "file" else server
    origin = "file://" if mode == "file" else server
    problems, math = [], {}
    for page in pages(out):
        relp = page.relative_to(out).as_posix()
        r = load(browser, f"{base}/{relp}")
        outside = [u for u in r["requests"] if not (u.startswith(origin) or u.startswith(("data:", "about:", "blob:")))]
        problems += [f"{relp}: request leaves the site: {u}" for u in outside]
        problems += [f"{relp}: failed request {f}" for f in r["failed"]]
        problems += [f"{relp}: console error {e['message']}" for e in r["errors"]]
        problems += [f"{relp}: {r['math_errors']} TeX error(s)"] if r["math_errors"] else []
        math[relp] = r["math"]
    assert not problems, "\n".join(problems[:30])
    for p in MATH_PAGES:
        assert math[p] > 0, f"{p}: MathJax typeset nothing (no mjx-container)"

def test_screenshots(site, browser):
    out, _ = site
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    for name, relp in [("site_home.png", "index.html"), ("site_paper.png", f"papers/{PILOT}.html")]:
        r = load(browser, (out / relp).resolve().as_uri())
        assert not r["failed"] and not r["errors"]
        browser.save_screenshot(str(ARTIFACTS / name))
        assert (ARTIFACTS / name).stat().st_size > 10_000
        print(f"screenshot: {ARTIFACTS / name}")

def test_standalone_report_typesets_offline(site, browser):
    """A report.html opened from file:// on its own unpacks its compressed MathJax, typesets the notebook's math and
    asks nothing of the network."""
    _, reports = site
    page = reports / PILOT / "report.html"
    browser.get_log("performance"); browser.get_log("browser")
    browser.get(page.resolve().as_uri())
    browser.execute_async_script(
        "const done = arguments[arguments.length - 1], t0 = Date.now();"
        "(function wait() { if (window.MathJax && MathJax.startup && MathJax.startup.promise)"
        "  MathJax.startup.promise.then(() => done(true), e => done(String(e)));"
        " else if (Date.now() - t0 > 60000) done('MathJax never started'); else setTimeout(wait, 50); })();")
    math = browser.execute_script("return [document.querySelectorAll('mjx-container').length,"
                                  " document.querySelectorAll('mjx-merror, [data-mjx-error]').length]")
    assert math[0] > 0 and math[1] == 0, math
    urls = [json.loads(e["message"])["message"]["params"]["request"]["url"] for e in browser.get_log("performance")
            if json.loads(e["message"])["message"]["method"] == "Network.requestWillBeSent"]
    assert not [u for u in urls if not u.startswith(("file:", "data:", "blob:", "about:"))], urls
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]

def test_report_first_screen_shows_tally_gates_and_claims(site, browser):
    "In a 1400 x 900 window a report's first screen shows the tally, the gate list and the first claim card."
    _, reports = site
    browser.set_window_size(1400, 900)
    try:
        browser.get((reports / PILOT / "report.html").resolve().as_uri())
        tops = browser.execute_script(
            "const top = s => { const e = document.querySelector(s); return e ? e.getBoundingClientRect().top : null; };"
            "return [window.innerHeight, top('.paper-head .tally'), top('.gates'), top('.claim-card'), top('.claim-card .lv, .claim-card .cn')];")
    finally: browser.set_window_size(1400, 1000)
    height, *where = tops
    assert all(t is not None and 0 <= t < height for t in where), tops

def test_home_filters_papers_by_verdict(site, browser):
    "The collection's verdict filter shows only the papers with a claim of that verdict, and 'any verdict' all again."
    out, _ = site
    browser.get((out / "index.html").resolve().as_uri())
    rows = "return [...document.querySelectorAll('table.collection tbody tr')].map(tr => [tr.dataset.verdicts, tr.hidden])"
    everything = browser.execute_script(rows)
    assert len(everything) == 3 and not any(h for _, h in everything)
    from selenium.webdriver.support.ui import Select
    pick = Select(browser.find_element("css selector", "select"))
    for value in ("v-reproduced", "v-not-checkable", ""):
        pick.select_by_value(value)
        shown = browser.execute_script(rows)
        assert all(hidden == (bool(value) and value not in v.split()) for v, hidden in shown), (value, shown)
    assert "Across the collection" not in (out / "index.html").read_text()

def test_search_works_offline(site, browser):
    "The search page, opened from file:// with a query, lists the pages that hold the word, from a local lunr index."
    out, _ = site
    assert (out / "static/search/lunr.js").exists() and (out / "static/search/index.js").exists()
    assert 'action="../search.html"' in (out / "lib/07_runner.html").read_text()      # the box on every page
    browser.get((out / "search.html").resolve().as_uri() + "?q=papermill")
    hits = browser.execute_script("return [...document.querySelectorAll('#results a')].map(a => a.getAttribute('href'))")
    assert "lib/07_runner.html" in hits, hits
    browser.get((out / "search.html").resolve().as_uri() + "?q=zzzqqqnotaword")
    assert browser.execute_script("return document.querySelectorAll('#results li').length") == 0
    assert not [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
