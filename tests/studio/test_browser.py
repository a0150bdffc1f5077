"""The studio page in headless Chromium: upload the demo CSV, move eps, read the partition table and
the value against ``ldpopt.optimal_mechanism``, download the mechanism file and load it, see the
error of a bad file, solve a decision problem, keep a screenshot.

The tests share one browser session (per test process) and reload the page each: any order, any
split between pytest-xdist workers.
"""

from __future__ import annotations

import json
import time
from importlib import resources

import numpy as np
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

import ldpopt
from ldpopt._validation import check_labelled_pair
from ldpopt.cli.design import DEMO_EVENTS
from ldpopt.deploy.sampling import report_counts

#: a page step (a design, a chart) that has not happened after this long has failed
WAIT = 60.0


def _demo_pair():
    p0 = {k: v[0] for k, v in DEMO_EVENTS.items()}
    p1 = {k: v[1] for k, v in DEMO_EVENTS.items()}
    u, v, labels = check_labelled_pair(p0, p1, normalize=True)  # what the page holds
    return dict(zip(labels, u, strict=True)), dict(zip(labels, v, strict=True))


def _wait(driver, condition, message: str):
    return WebDriverWait(driver, WAIT, poll_frequency=0.05).until(lambda d: condition(d), message)


#: what the page shows of the design, read in one script (the tables are redrawn on every change)
READ_DESIGN = """
const s = document.getElementById('design-summary');
return {state: s.dataset.state, eps: s.dataset.eps, value: s.dataset.value,
        partition: [...document.querySelectorAll('#partition tbody tr')].map(r => r.cells[1].textContent)};
"""


def _design_at(driver, eps: str) -> dict:
    """Wait for the design at ``eps`` and return what the page shows."""
    seen: dict = {}

    def ready(d) -> bool:
        seen.update(d.execute_script(READ_DESIGN))
        return seen["state"] == "ready" and seen["eps"] == eps

    _wait(driver, ready, f"no design at eps = {eps}")
    return {"value": float(seen["value"]), "partition": [row.split(", ") for row in seen["partition"]]}


def _upload(driver, input_id: str, path) -> None:
    driver.find_element(By.ID, input_id).send_keys(str(path))


@pytest.fixture
def page(browser, server, tmp_path):
    """The freshly loaded page, the download folder (emptied) and a folder for the test's files."""
    driver, downloads = browser
    for f in downloads.iterdir():
        f.unlink()
    driver.get(server.url + "/")
    # read in the page each time: an element looked up before the page is parsed can be stale
    ready = "return !!document.body && document.body.dataset.ready === '1'"
    _wait(driver, lambda d: d.execute_script(ready), "page not ready")
    return driver, downloads, tmp_path


def _load_demo(driver, eps: str | None = None) -> None:
    """The built-in demo loaded, at ``eps`` typed into the exact field when given."""
    driver.find_element(By.ID, "load-demo").click()
    status = driver.find_element(By.ID, "data-status")
    _wait(driver, lambda d: status.get_attribute("data-k") == "12", "demo not loaded")
    if eps is not None:
        field = driver.find_element(By.ID, "eps")
        field.clear()
        field.send_keys(eps)
    _design_at(driver, eps or "1")


def test_upload_demo_csv_and_move_eps(page):
    driver, _, files = page
    demo = files / "demo.csv"
    demo.write_bytes(resources.files("ldpopt.studio").joinpath("static", "demo.csv").read_bytes())
    _upload(driver, "upload-file", demo)
    status = driver.find_element(By.ID, "data-status")
    _wait(driver, lambda d: status.get_attribute("data-k") == "12", "demo not loaded")
    p0, p1 = _demo_pair()
    for eps, shown in ((1.0, "1"), (1.5, "1.5")):
        if eps != 1.0:  # move the slider with the keyboard: 50 steps of 0.01
            slider = driver.find_element(By.ID, "eps-slider")
            slider.send_keys(*([Keys.ARROW_RIGHT] * 50))
        seen = _design_at(driver, shown)
        ref = ldpopt.optimal_mechanism(p0, p1, eps)
        assert seen["value"] == ref.value  # the same floats through the same solver, printed by repr
        assert seen["partition"] == [[str(x) for x in b] for b in ref.labelled_partition]
    assert driver.find_element(By.ID, "eps").get_attribute("value") == "1.5"
    # the channel heat map is drawn with one row per symbol
    rows = driver.execute_script("return document.getElementById('channel').data[0].z.length")
    assert rows == 12


def test_exact_eps_field_and_budget(page):
    driver, _, _ = page
    _load_demo(driver, "2.25")
    budget = driver.find_element(By.ID, "max-outputs")
    budget.send_keys("3")
    p0, p1 = _demo_pair()
    ref = ldpopt.optimal_mechanism(p0, p1, 2.25, max_outputs=3)
    _wait(driver, lambda d: _design_at(d, "2.25")["value"] == ref.value, "no design with the budget")
    assert _design_at(driver, "2.25")["partition"] == [[str(x) for x in b] for b in ref.labelled_partition]
    budget.clear()
    budget.send_keys(Keys.BACKSPACE)  # an input event with the field empty: no budget
    ref = ldpopt.optimal_mechanism(p0, p1, 2.25)
    _wait(driver, lambda d: _design_at(d, "2.25")["value"] == ref.value, "the budget was not lifted")


def test_divergence_with_a_parameter(page):
    driver, _, _ = page
    _load_demo(driver, "2.25")
    Select(driver.find_element(By.ID, "divergence")).select_by_value("egamma")
    param = driver.find_element(By.ID, "param")
    _wait(driver, lambda d: param.is_displayed(), "no parameter field for egamma")
    param.clear()
    param.send_keys("0.5")  # gamma < 1: the factory's own message
    with pytest.raises(ValueError) as info:
        ldpopt.egamma(0.5)
    error = driver.find_element(By.ID, "design-error")
    _wait(driver, lambda d: str(info.value) in error.text, "no error for gamma = 0.5")
    param.send_keys(Keys.BACKSPACE, Keys.BACKSPACE, Keys.BACKSPACE, "1.75")
    p0, p1 = _demo_pair()
    ref = ldpopt.optimal_mechanism(p0, p1, 2.25, ldpopt.egamma(1.75))
    _wait(driver, lambda d: _design_at(d, "2.25")["value"] == ref.value, "no E_gamma design")
    assert error.text == ""
    Select(driver.find_element(By.ID, "divergence")).select_by_value("kl")
    _wait(driver, lambda d: not param.is_displayed(), "the parameter field stays for kl")
    ref = ldpopt.optimal_mechanism(p0, p1, 2.25)
    _wait(driver, lambda d: _design_at(d, "2.25")["value"] == ref.value, "no KL design")


def test_tradeoff_curve_is_drawn(page):
    driver, _, _ = page
    _load_demo(driver)
    driver.find_element(By.ID, "draw-curve").click()

    def traces(d):
        return d.execute_script(
            "const c = document.getElementById('curve'); return c.data ? c.data.map(t => t.name) : null"
        )

    _wait(driver, lambda d: traces(d) == ["optimal", "binary", "k-RR"], "no trade-off curve")
    xs = driver.execute_script("return document.getElementById('outputs').data[0].x.length")
    assert xs == 101


def test_download_mechanism_file_and_design(page):
    driver, downloads, _ = page
    _load_demo(driver, "2.25")
    driver.find_element(By.ID, "download-mechanism").click()
    target = downloads / "mechanism.json"
    _wait(driver, lambda d: target.exists() and target.stat().st_size > 0, "no mechanism file downloaded")
    time.sleep(0.2)  # the file appears under its name once complete; let the browser close it
    mech = ldpopt.Mechanism.from_json(target)
    p0, p1 = _demo_pair()
    ref = ldpopt.optimal_mechanism(p0, p1, 2.25)
    assert np.array_equal(mech.matrix, ref.mechanism.matrix) and mech.eps == 2.25
    assert list(mech.labels) == list(DEMO_EVENTS)
    driver.find_element(By.ID, "download-design").click()
    design = downloads / "design.json"
    _wait(driver, lambda d: design.exists() and design.stat().st_size > 0, "no design JSON downloaded")
    time.sleep(0.2)
    doc = json.loads(design.read_text())
    assert doc["design"]["value"] == ref.value and doc["inputs"]["eps"] == "2.25"


def test_sample_sizes(page):
    driver, _, _ = page
    _load_demo(driver, "2.25")
    driver.find_element(By.ID, "sample-size").click()
    rows = "#samplesize tbody tr"
    _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, rows)) == 3, "no sample sizes")
    first = driver.find_elements(By.CSS_SELECTOR, rows)[0].find_elements(By.TAG_NAME, "td")
    p0, p1 = _demo_pair()
    ref = ldpopt.sample_size(ldpopt.optimal_mechanism(p0, p1, 2.25).mechanism, p0, p1, 0.05, 0.05)
    assert first[0].text == "optimal" and int(first[1].text) == ref.n


def test_bad_file_shows_the_error(page):
    driver, _, files = page
    _load_demo(driver)
    bad = files / "bad.csv"
    bad.write_text("label,p0,p1\na,1,2\nb,lots,3\n")
    _upload(driver, "upload-file", bad)
    with pytest.raises(ValueError) as info:  # the library's reader, its message
        ldpopt.read_pair(bad, label="label", normalize=True, optional_label=True)
    error = driver.find_element(By.ID, "data-error")
    _wait(driver, lambda d: error.text != "", "no error shown")
    assert str(info.value) in error.text
    # the previous data stays loaded
    assert driver.find_element(By.ID, "data-status").get_attribute("data-k") == "12"


def test_decision_problem(page):
    driver, _, files = page
    prob = {
        "likelihood": [[0.5, 0.1], [0.3, 0.3], [0.2, 0.6]],
        "loss": [[0, 1], [1, 0]],
        "labels": {"inputs": ["low", "mid", "high"], "actions": ["accept", "reject"]},
        "name": "two hypotheses",
    }
    path = files / "problem.json"
    path.write_text(json.dumps(prob))
    eps = driver.find_element(By.ID, "decide-eps")
    eps.clear()
    eps.send_keys("0.7")
    _upload(driver, "problem-file", path)
    _wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, ".decide-value")) == 2, "no decisions")
    p = ldpopt.DecisionProblem(prob["likelihood"], prob["loss"])
    for head in driver.find_elements(By.CSS_SELECTOR, ".decide-value"):
        risk = head.get_attribute("data-risk")
        assert float(head.get_attribute("data-value")) == ldpopt.optimal_channel(p, 0.7, risk=risk).value


def test_screenshot(page):
    driver, _, tmp_path = page
    driver.get_log("browser")  # forget what earlier tests logged
    _load_demo(driver, "2.25")
    driver.find_element(By.ID, "draw-curve").click()
    _wait(driver, lambda d: d.execute_script("return !!document.getElementById('curve').data"), "no curve")
    shot = tmp_path / "studio.png"  # kept under pytest's temp dir (the CI artifact)
    assert driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # no script error, no missing file, no server failure; a 400 is an input refused on purpose (the
    # eps field is briefly empty while a test types into it)
    severe = [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert all("status of 400 (Bad Request)" in m for m in severe), severe


def test_pasted_pairs(page):
    driver, _, _ = page
    driver.find_element(By.CSS_SELECTOR, "#data-panel summary").click()
    driver.find_element(By.ID, "paste-p0").send_keys("x=30, y=50\nz=20")
    driver.find_element(By.ID, "paste-p1").send_keys("x=10, y=40, z=50")
    driver.find_element(By.ID, "use-pasted").click()
    status = driver.find_element(By.ID, "data-status")
    _wait(driver, lambda d: status.get_attribute("data-k") == "3", "pasted pair not loaded")
    p0, p1 = {"x": 0.3, "y": 0.5, "z": 0.2}, {"x": 0.1, "y": 0.4, "z": 0.5}
    ref = ldpopt.optimal_mechanism(p0, p1, 1.0)
    seen = _design_at(driver, "1")
    assert seen["value"] == pytest.approx(ref.value, rel=1e-14)  # 30/100 vs 0.3: rounding only
    assert seen["partition"] == [list(b) for b in ref.labelled_partition]


def test_opens_on_the_demo(page):
    driver, _, _ = page  # no click: the page loads the demo by itself
    assert driver.find_element(By.ID, "data-status").get_attribute("data-k") == "12"
    p0, p1 = _demo_pair()
    seen = _design_at(driver, "1")
    assert seen["value"] == ldpopt.optimal_mechanism(p0, p1, 1.0).value


COUNTS_CSV = """category,normal,fraud
page_view,3100,1200
search,1400,600
checkout,600,1100
gift_card,0,1500
password_reset,120,900
review_post,900,0
"""


def test_upload_picks_label_and_pair_columns(page):
    driver, _, files = page
    path = files / "counts.csv"
    path.write_text(COUNTS_CSV)
    _upload(driver, "upload-file", path)
    status = driver.find_element(By.ID, "data-status")
    _wait(driver, lambda d: status.get_attribute("data-k") == "6", "counts.csv not loaded")
    assert driver.find_element(By.ID, "columns-row").is_displayed()
    picked = [
        Select(driver.find_element(By.ID, i)).first_selected_option.text
        for i in ("col-label", "col-p0", "col-p1")
    ]
    assert picked == ["category", "normal", "fraud"]
    pair = ldpopt.read_pair(path, "normal", "fraud", "category", normalize=True)
    p0, p1 = pair.as_dicts()
    assert _design_at(driver, "1")["value"] == ldpopt.optimal_mechanism(p0, p1, 1.0).value
    # swap the hypotheses with the pickers: the design follows
    Select(driver.find_element(By.ID, "col-p0")).select_by_value("fraud")
    Select(driver.find_element(By.ID, "col-p1")).select_by_value("normal")
    ref = ldpopt.optimal_mechanism(p1, p0, 1.0).value
    _wait(driver, lambda d: _design_at(d, "1")["value"] == ref, "the pickers did not reload the pair")
    # no label column: the symbols are numbered
    Select(driver.find_element(By.ID, "col-label")).select_by_value("")
    _wait(driver, lambda d: "0, 1, 2" in d.find_element(By.ID, "data-status").text, "labels not dropped")


READ_REPORTS = """
const s = document.getElementById('reports-summary');
return {state: s.dataset.state, n: s.dataset.n, decision: s.dataset.decision,
        estimate: s.dataset.estimate, central: s.dataset.central,
        error: document.getElementById('reports-error').textContent};
"""


def _reports_shown(driver, n: int) -> dict:
    seen: dict = {}

    def ready(d) -> bool:
        seen.update(d.execute_script(READ_REPORTS))
        return seen["state"] == "ready" and seen["n"] == str(n)

    _wait(driver, ready, f"no analysis of {n} reports ({seen})")
    return seen


def _mixture_reports(mech, p0: dict, p1: dict, n: int, pi: float, seed: int) -> list:
    labels = list(p0)
    mix = np.array([(1 - pi) * p0[x] + pi * p1[x] for x in labels])
    rng = np.random.default_rng(seed)
    x = rng.choice(len(labels), size=n, p=mix / mix.sum())
    return list(mech.privatize([labels[i] for i in x], rng=rng))


def test_reports_panel_tests_estimates_and_shuffles(page):
    driver, _, files = page
    p0, p1 = _demo_pair()
    mech = ldpopt.optimal_mechanism(p0, p1, 1.0).mechanism
    reports = _mixture_reports(mech, p0, p1, 2000, 0.2, seed=7)
    path = files / "reports.csv"
    path.write_text("user_id,report\n" + "".join(f"u{i},{r}\n" for i, r in enumerate(reports)))
    _upload(driver, "reports-file", path)
    seen = _reports_shown(driver, 2000)
    counts = report_counts(mech, reports)
    ref_test = ldpopt.LikelihoodRatioTest(mech, p0, p1, alpha=0.05).decide_counts(counts)
    ref_est = ldpopt.mixture_proportion(mech, p0=p0, p1=p1, reports=None, counts=counts)
    ref_central = ldpopt.central_epsilon(1.0, 2000, 1e-6)
    assert int(seen["decision"]) == ref_test.decision
    assert float(seen["estimate"]) == ref_est.value
    assert float(seen["central"]) == ref_central.value
    text = driver.find_element(By.ID, "reports-results").text
    verdict = "not consistent with P0" if ref_test.decision == 1 else "consistent with P0"
    assert verdict in text


def test_reports_panel_with_a_mechanism_file_and_a_bad_report(page):
    driver, _, files = page
    p0, p1 = _demo_pair()
    rr = ldpopt.randomized_response(len(p0), 2.0, labels=list(p0))
    mfile = files / "rr.json"
    rr.to_json(mfile, p0=p0, p1=p1)
    _upload(driver, "reports-mechanism-file", mfile)
    reports = _mixture_reports(rr, p0, p1, 500, 0.5, seed=3)
    path = files / "rr-reports.csv"
    path.write_text("report\n" + "".join(f"{r}\n" for r in reports))
    _upload(driver, "reports-file", path)
    seen = _reports_shown(driver, 500)
    counts = report_counts(rr, reports)
    ref = ldpopt.mixture_proportion(rr, p0=p0, p1=p1, reports=None, counts=counts)
    assert float(seen["estimate"]) == ref.value
    assert float(seen["central"]) == ldpopt.central_epsilon(2.0, 500, 1e-6).value
    bad = files / "bad-reports.csv"
    bad.write_text("report\nnot_an_output\n")
    _upload(driver, "reports-file", bad)
    error = driver.find_element(By.ID, "reports-error")
    _wait(driver, lambda d: "'not_an_output'" in error.text, "no error for an unknown report")
