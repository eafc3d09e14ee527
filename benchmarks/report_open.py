"""How long each paper's report.html takes to open in headless Chromium, from file:// as a reader opens it.

For every reports/<slug>/report.html: its size, and over --repeat loads (median, min, max) the milliseconds to
DOMContentLoaded, to the load event, and until MathJax has typeset the page (the last thing a reader waits for).
Writes benchmarks/report_open.json. Run it on an idle machine, after smoke runs have written the reports:

    .venv/bin/python benchmarks/report_open.py [--repeat 5]
"""
from __future__ import annotations
import argparse, json, os, platform, shutil, statistics, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

def driver():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900",
              "--disable-extensions", "--no-first-run", "--allow-file-access-from-files"]:
        opts.add_argument(a)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)

def open_once(d, url: str) -> dict:
    "One cold-cache load of `url`: ms to DOMContentLoaded, load event, and MathJax typeset (None when no MathJax)."
    d.execute_cdp_cmd("Network.clearBrowserCache", {})
    d.get("about:blank"); d.get(url)
    t = d.execute_script("const n = performance.getEntriesByType('navigation')[0];"
                         "return [n.domContentLoadedEventEnd, n.loadEventEnd];")
    math = d.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "const wait = () => (window.MathJax && MathJax.startup && MathJax.startup.promise) ?"
        " MathJax.startup.promise.then(() => done(performance.now())) : "
        " (performance.now() > 20000 ? done(null) : setTimeout(wait, 10)); wait();")
    return dict(dom_ms=t[0], load_ms=t[1], typeset_ms=math)

def main(argv=None) -> Path:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--reports", default=str(ROOT / "reports"))
    args = ap.parse_args(argv)
    reports = sorted(Path(args.reports).glob("*/report.html"))
    if not reports: raise SystemExit(f"no reports/<slug>/report.html under {args.reports}: run `make reproduce` first")
    d = driver(); d.set_script_timeout(60)
    rows = {}
    try:
        for f in reports:
            runs = [open_once(d, f.resolve().as_uri()) for _ in range(args.repeat)]
            pick = lambda k: [r[k] for r in runs if r[k] is not None]
            rows[f.parent.name] = dict(mb=round(f.stat().st_size / 2**20, 2), **{
                k: dict(median=round(statistics.median(v)), min=round(min(v)), max=round(max(v))) if v else None
                for k, v in ((k, pick(k)) for k in ("dom_ms", "load_ms", "typeset_ms"))})
            print(f.parent.name, rows[f.parent.name])
    finally: d.quit()
    out = ROOT / "benchmarks" / "report_open.json"
    out.write_text(json.dumps(dict(machine=dict(cpus=os.cpu_count(), platform=platform.platform(),
                                                load_before=round(os.getloadavg()[0], 1),
                                                when=time.strftime("%Y-%m-%d %H:%M")),
                                   repeat=args.repeat, reports=rows), indent=1) + "\n")
    return out

if __name__ == "__main__":
    print(main())
