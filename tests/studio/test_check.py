"""The studio's "check a mechanism" panel and its target mode: over HTTP (answers equal the
library's, bad input a 400 with the library's message) and in headless Chromium (paste a matrix,
upload a mechanism file beside the demo pair, search the smallest eps)."""

from __future__ import annotations

import base64
import io
import json
import math

import numpy as np
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

import ldpopt
from ldpopt._validation import check_labelled_pair
from ldpopt.cli.design import DEMO_EVENTS

WAIT = 60.0
DEMO_P0 = {k: v[0] for k, v in DEMO_EVENTS.items()}
DEMO_P1 = {k: v[1] for k, v in DEMO_EVENTS.items()}


def _demo_pair():
    u, v, labels = check_labelled_pair(DEMO_P0, DEMO_P1, normalize=True)  # what the page holds
    return dict(zip(labels, u, strict=True)), dict(zip(labels, v, strict=True))


# ---------------------------------------------------------------------------------------------
# over HTTP
# ---------------------------------------------------------------------------------------------
def test_check_pasted_and_uploaded(server):
    status, res = server.post_json("/api/check", {"text": "0.75, 0.25\n0.25, 0.75"})
    assert status == 200
    ref = ldpopt.certify_epsilon([[0.75, 0.25], [0.25, 0.75]])
    assert res["epsilon"] == ref.epsilon and res["epsilon_upper"] == ref.epsilon_upper
    assert res["max_ratio"] == "3/1" and "load a pair" in res["beside"]["note"]
    buf = io.BytesIO()
    np.save(buf, np.array([[1e-300, 1.0 - 1e-300], [1e-310, 1.0]]))
    status, res = server.post_json(
        "/api/check", {"name": "m.npy", "file": base64.b64encode(buf.getvalue()).decode()}
    )
    assert status == 200 and res["epsilon"] == ldpopt.certify_epsilon([[1e-300, 1.0], [1e-310, 1.0]]).epsilon
    status, res = server.post_json("/api/check", {"text": "1, 0\n0.5, 0.5"})
    assert status == 200 and res["epsilon"] == "inf" and res["max_ratio"] is None


def test_check_beside_the_optimal_mechanism(server):
    p0, p1 = _demo_pair()
    rr = ldpopt.randomized_response(12, 1.0, labels=list(p0))
    payload = {"text": "\n".join(",".join(map(repr, r)) for r in rr.matrix.tolist())}
    payload.update({"p0": [float(x) for x in p0.values()], "p1": [float(x) for x in p1.values()]})
    payload.update({"labels": list(p0), "divergence": "kl"})
    status, res = server.post_json("/api/check", payload)
    assert status == 200, res
    eps = res["epsilon_upper"]
    rows = res["beside"]["rows"]
    assert rows[0]["value"] == pytest.approx(rr.utility(p0, p1, "kl"), rel=1e-12)
    opt = ldpopt.optimal_mechanism(p0, p1, eps, "kl")
    assert rows[1]["value"] == opt.value >= rows[0]["value"]
    assert rows[1]["blocks"] == " | ".join(", ".join(map(str, b)) for b in opt.labelled_partition)


def test_target_endpoint(server):
    p0, p1 = _demo_pair()
    req = {"p0": [float(x) for x in p0.values()], "p1": [float(x) for x in p1.values()], "labels": list(p0)}
    status, res = server.post_json("/api/target", {**req, "n": "200", "alpha": "0.05", "beta": "0.1"})
    assert status == 200, res
    ref = ldpopt.minimum_epsilon(p0, p1, n=200, alpha=0.05, beta=0.1, divergence="chernoff")
    assert res["eps"] == ref.eps and res["type_ii"] == ref.value


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"text": ""}, "paste a matrix"),
        ({"text": "0.5, 0.7\n0.5, 0.5"}, "rows must sum to 1"),
        ({"text": "0.5, x\n0.5, 0.5"}, "not a number"),
        ({"name": "m.npy", "file": "%%%"}, "not valid base64"),
    ],
)
def test_check_bad_input(server, payload, message):
    status, res = server.post_json("/api/check", payload)
    assert status == 400 and message in res["error"]


def test_target_bad_input(server):
    p0, p1 = _demo_pair()
    req = {"p0": [float(x) for x in p0.values()], "p1": [float(x) for x in p1.values()], "n": "0"}
    status, res = server.post_json("/api/target", req)
    assert status == 400 and "n must be" in res["error"]


# ---------------------------------------------------------------------------------------------
# in the browser
# ---------------------------------------------------------------------------------------------
def _wait(driver, condition, message: str):
    return WebDriverWait(driver, WAIT, poll_frequency=0.05).until(lambda d: condition(d), message)


@pytest.fixture
def page(browser, server):
    driver, _ = browser
    driver.get(server.url + "/")
    ready = "return !!document.body && document.body.dataset.ready === '1'"
    _wait(driver, lambda d: d.execute_script(ready), "page not ready")
    status = driver.find_element(By.ID, "data-status")
    _wait(driver, lambda d: status.get_attribute("data-k") == "12", "demo not loaded")
    return driver


def _summary(driver, id_: str) -> dict:
    el = driver.find_element(By.ID, id_)
    _wait(driver, lambda d: el.get_attribute("data-state") in ("ready", "error"), f"{id_}: no answer")
    return driver.execute_script(f"return Object.assign({{}}, document.getElementById('{id_}').dataset)")


def test_browser_check_pasted_matrix(page):
    driver = page
    box = driver.find_element(By.ID, "check-matrix")
    box.send_keys("0.6, 0.3, 0.1\n0.2, 0.5, 0.3\n0.1, 0.3, 0.6")
    driver.find_element(By.ID, "check-run").click()
    seen = _summary(driver, "check-summary")
    ref = ldpopt.certify_epsilon([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]])
    assert (
        seen["state"] == "ready"
        and float(seen["eps"]) == ref.epsilon
        and float(seen["upper"]) == ref.epsilon_upper
    )
    rows = driver.find_elements(By.CSS_SELECTOR, "#check-results tbody tr")
    assert (
        rows[4].find_elements(By.TAG_NAME, "td")[1].text
        == f"{ref.max_ratio.numerator}/{ref.max_ratio.denominator}"
    )
    # a bad matrix: the library's message, in the page
    box.clear()
    box.send_keys("0.5, 0.7\n0.5, 0.5")
    driver.find_element(By.ID, "check-run").click()
    _wait(
        driver, lambda d: "rows must sum to 1" in d.find_element(By.ID, "check-error").text, "no error shown"
    )


def test_browser_check_uploaded_mechanism_beside_the_optimum(page, tmp_path):
    driver = page
    p0, p1 = _demo_pair()
    rr = ldpopt.randomized_response(12, 1.5, labels=list(p0))
    path = tmp_path / "rr.json"
    rr.to_json(path)
    driver.find_element(By.ID, "check-file").send_keys(str(path))
    seen = _summary(driver, "check-summary")
    assert seen["state"] == "ready"
    ref = ldpopt.certify_epsilon(rr)
    opt = ldpopt.optimal_mechanism(p0, p1, ref.epsilon_upper, "kl")
    assert float(seen["optimal"]) == opt.value
    assert math.isclose(float(seen["checked"]), rr.utility(p0, p1, "kl"), rel_tol=1e-12)
    assert float(seen["checked"]) <= float(seen["optimal"])


def test_browser_target_mode(page):
    driver = page
    field = driver.find_element(By.ID, "target-n")
    field.clear()
    field.send_keys("300")
    beta = driver.find_element(By.ID, "beta")
    beta.clear()
    beta.send_keys("0.1")
    driver.find_element(By.ID, "target-run").click()
    seen = _summary(driver, "target-summary")
    p0, p1 = _demo_pair()
    ref = ldpopt.minimum_epsilon(p0, p1, n=300, alpha=0.05, beta=0.1, divergence="kl")
    assert seen["state"] == "ready" and float(seen["eps"]) == ref.eps
    assert json.dumps(seen)  # the data attributes are plain strings


def test_target_refuses_another_divergence(server):
    p0, p1 = _demo_pair()
    req = {"p0": [float(x) for x in p0.values()], "p1": [float(x) for x in p1.values()], "n": "200"}
    status, res = server.post_json("/api/target", {**req, "divergence": "tv"})
    assert status == 400 and "divergence" in res["error"] and "'tv'" in res["error"]


def test_target_function_refuses_another_divergence():
    from ldpopt.studio.check import target

    p0, p1 = _demo_pair()
    req = {"p0": [float(x) for x in p0.values()], "p1": [float(x) for x in p1.values()], "n": 200}
    with pytest.raises(ValueError, match="divergence='hellinger'"):
        target({**req, "divergence": "hellinger"})
