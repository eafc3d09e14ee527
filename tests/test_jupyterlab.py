"""JupyterLab as nbdev intends it: a paper notebook opens unmodified on the project's named kernel, its first cells run,
and saving it runs nbdev's clean hook, so the notebook on disk is one that `nbdev-clean` leaves alone."""
import json, os, shutil, socket, subprocess, time, urllib.request
from pathlib import Path

import pytest

from conftest import BIN
from test_site import browser, CHROMIUM   # noqa: F401  (the shared headless Chromium)

KERNEL = "paperlib"

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0)); return s.getsockname()[1]

@pytest.fixture(scope="module")
def lab(scratch_repo, tmp_path_factory):
    "JupyterLab on 127.0.0.1 over the scratch repo, with its own settings and workspaces, nothing fetched from outside."
    spec = subprocess.run([BIN / "jupyter", "kernelspec", "list", "--json"], capture_output=True, text=True)
    if KERNEL not in json.loads(spec.stdout or "{}").get("kernelspecs", {}):
        pytest.fail(f"no '{KERNEL}' kernel: `make env` installs it (python -m ipykernel install --sys-prefix --name {KERNEL})")
    home, port = tmp_path_factory.mktemp("lab"), _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "PYTHONPATH": str(scratch_repo)}
    proc = subprocess.Popen([BIN / "jupyter", "lab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
                             "--IdentityProvider.token=", "--ServerApp.password=", f"--ServerApp.root_dir={scratch_repo}",
                             "--LabApp.news_url=None", "--allow-root", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
                             "--LabApp.extension_manager=readonly", f"--LabApp.workspaces_dir={home / 'ws'}",
                             f"--LabApp.user_settings_dir={home / 'settings'}"],
                            env=env, stdout=subprocess.DEVNULL, stderr=open(home / "lab.log", "w"))
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try: urllib.request.urlopen(f"{url}/api/status", timeout=2); break
        except OSError: time.sleep(0.5)
    else:
        proc.kill(); pytest.fail("JupyterLab did not start:\n" + (home / "lab.log").read_text()[-3000:])
    yield url
    proc.terminate()
    try: proc.wait(10)
    except subprocess.TimeoutExpired: proc.kill()

def _wait(driver, js: str, seconds: float = 90):
    t0 = time.time()
    while time.time() - t0 < seconds:
        v = driver.execute_script(js)
        if v: return v
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for: {js}")

def test_notebook_opens_clean_and_saves_clean(lab, browser, scratch_repo):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys
    rel = "nbs/papers/demo_paper.ipynb"
    path = scratch_repo / rel
    stored = json.loads(path.read_text())["metadata"]
    assert stored["kernelspec"]["name"] == KERNEL and "language_info" in stored
    browser.get(f"{lab}/lab/tree/{rel}")
    idle = ("const s = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook-ExecutionIndicator');"
            "return s && s.getAttribute('data-status') === 'idle';")
    _wait(browser, idle)
    time.sleep(3)                                      # let the kernel's info reach the notebook's metadata
    dirty = "return !!document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty');"
    assert not browser.execute_script(dirty), "the notebook is marked modified on opening"
    assert "paperlib" in browser.execute_script(
        "return document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-KernelName').textContent")
    # run the first cells (frontmatter, title, imports, parameters)
    browser.find_element("css selector", ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").click()
    for _ in range(5):
        ActionChains(browser).send_keys(Keys.ESCAPE).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
        _wait(browser, idle)
    assert browser.execute_script("return document.querySelectorAll('.jp-InputPrompt').length") > 0
    clean = "return !document.querySelector('.lm-TabBar-tab.jp-mod-current.jp-mod-dirty');"
    for wait in (30, 60):       # a busy machine can drop the keystroke (1 full suite in 3 here): press it again, then wait longer
        ActionChains(browser).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
        try: _wait(browser, clean, wait); break
        except AssertionError:
            if wait == 60: raise
    saved = path.read_text()
    # the save hook ran nbdev-clean: cleaning the saved file again changes nothing
    copy = path.with_name("resaved.ipynb"); shutil.copy(path, copy)
    r = subprocess.run([BIN / "nbdev-clean", "--fname", copy], cwd=scratch_repo, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert copy.read_text() == saved, "the saved notebook is not what nbdev-clean writes: the save hook did not run"
    assert json.loads(saved)["metadata"] == stored          # the kernel and language as stored: nothing rewritten
    copy.unlink()
