"""The studio's endpoints over real HTTP: answers equal the library's, every bad input is a 400 (413
for an oversize body) carrying the library's own message, 20 parallel designs, no file written."""

from __future__ import annotations

import http.client
import io
import json
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import ldpopt
from ldpopt._validation import check_eps, check_labelled_pair
from ldpopt.cli.design import DEMO_EVENTS
from ldpopt.studio import app as studio_app
from ldpopt.studio import core
from reference import brute_force_argmax, naive_divergence

DEMO_P0 = {k: v[0] for k, v in DEMO_EVENTS.items()}
DEMO_P1 = {k: v[1] for k, v in DEMO_EVENTS.items()}


def _demo(server):
    status, data = server.request("/api/demo")
    assert status == 200
    return json.loads(data)


def _validator_message(exc_type, fn, *args, **kwargs) -> str:
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    return str(info.value)


def test_page_and_static_files(server):
    status, page = server.request("/")
    assert status == 200 and b"ldpopt studio" in page and b"/static/plotly.min.js" in page
    status, js = server.request("/static/plotly.min.js")
    assert status == 200 and len(js) > 1_000_000  # plotly.js itself, from the plotly package
    assert server.request("/static/../app.py")[0] == 404
    assert server.request("/static/nothere.js")[0] == 404
    status, opts = server.request("/api/options")
    names = json.loads(opts)["divergences"]
    assert set(ldpopt.divergences.BUILTIN_NAMES) <= set(names) and {"egamma", "renyi"} <= set(names)


def test_only_requests_for_this_host_are_answered(server):
    # a page of another site that resolves its name to 127.0.0.1 (DNS rebinding) is refused
    assert server.request("/api/options", headers={"Host": "attacker.example"})[0] == 400
    assert server.request("/api/options", headers={"Host": "localhost"})[0] == 200


def test_demo_is_the_cli_demo(server):
    pair = _demo(server)
    a, b, labels = check_labelled_pair(DEMO_P0, DEMO_P1, normalize=True)
    assert pair["labels"] == list(labels) and pair["p0"] == a.tolist() and pair["p1"] == b.tolist()


def test_design_matches_the_library_and_brute_force(server):
    p0 = {"a": 3.0, "b": 1.0, "c": 4.0, "d": 2.0, "e": 5.0}  # counts
    p1 = {"a": 1.0, "b": 5.0, "c": 2.0, "d": 2.0, "e": 1.0}
    status, pair = server.post_json(
        "/api/pasted", {"p0": "a=3, b=1, c=4, d=2, e=5", "p1": "a=1,b=5,c=2,d=2,e=1"}
    )
    assert status == 200 and pair["labels"] == list("abcde")
    status, res = server.post_json("/api/design", {**pair, "eps": "1.5", "divergence": "kl"})
    assert status == 200, res
    ref = ldpopt.optimal_mechanism(p0, p1, 1.5, "kl", normalize=True)
    # same floats into the same solver, value sent through JSON (repr round-trips): the same bits
    assert res["value"] == ref.value
    assert res["partition"] == [list(b) for b in ref.labelled_partition]
    assert np.array_equal(res["matrix"], ref.mechanism.matrix)
    u, v, _ = check_labelled_pair(p0, p1, normalize=True)
    best, part = brute_force_argmax(u, v, 1.5, lambda x, y: naive_divergence(x, y, "kl"))
    # an independent optimum: every set partition of the 5 symbols
    assert res["value"] == pytest.approx(best, rel=1e-12)
    rows = {r["mechanism"]: r for r in res["comparison"]}
    assert rows["k-RR"]["value"] == pytest.approx(
        naive_divergence(*(ldpopt.randomized_response(5, 1.5).matrix.T @ w for w in (u, v)), "kl"), rel=1e-12
    )
    assert rows["optimal"]["value"] >= rows["binary"]["value"] - 1e-15
    assert 0 <= rows["k-RR"]["normalised"] <= rows["optimal"]["normalised"] <= 1


def test_curve_matches_optimal_mechanism(server):
    pair = _demo(server)
    req = {**pair, "eps_min": "0.5", "eps_max": "3", "points": "6", "divergence": "renyi", "param": "2"}
    status, res = server.post_json("/api/curve", req)
    assert status == 200, res
    assert res["eps"] == np.linspace(0.5, 3, 6).tolist()
    for e, value, n in zip(res["eps"], res["value"]["optimal"], res["num_outputs"], strict=True):
        ref = ldpopt.optimal_mechanism(DEMO_P0, DEMO_P1, e, ldpopt.renyi(2), normalize=True)
        assert n == ref.num_outputs
        # the batched solver equals the single one (its documented contract)
        assert value == pytest.approx(ref.value, rel=1e-12)
    assert all(x <= y + 1e-12 for x, y in zip(res["value"]["k-RR"], res["value"]["optimal"], strict=True))


def test_deployment_and_mechanism_file(server, tmp_path):
    pair = _demo(server)
    req = {**pair, "eps": 1, "alpha": "0.05", "beta": 0.1}
    status, res = server.post_json("/api/deployment", req)
    assert status == 200, res
    opt = ldpopt.optimal_mechanism(DEMO_P0, DEMO_P1, 1.0, normalize=True)
    u, v, _ = check_labelled_pair(DEMO_P0, DEMO_P1, normalize=True)
    ref = ldpopt.sample_size(opt.mechanism, u, v, 0.05, 0.1)
    assert res["rows"][0]["n"] == ref.n and [r["mechanism"] for r in res["rows"]] == [
        "optimal",
        "binary",
        "k-RR",
    ]
    for which in ("optimal", "k-RR"):
        status, text = server.request(
            "/api/mechanism",
            json.dumps({**req, "which": which}).encode(),
            {"Content-Type": "application/json"},
        )
        assert status == 200
        path = tmp_path / f"{which}.json"
        path.write_bytes(text)
        mech = ldpopt.Mechanism.from_json(path)
        expect = opt.mechanism if which == "optimal" else ldpopt.randomized_response(12, 1.0)
        assert np.array_equal(mech.matrix, expect.matrix)


@pytest.mark.parametrize(
    ("name", "body", "expected"),
    [
        ("x.csv", b"label,p0,p1\na,1,2\nb,abc,3\n", "column 'p0', data row 2: 'abc' is not a number"),
        ("x.csv", b"label,p0\na,1\n", "missing column(s) p1"),
        ("x.csv", b"label,p0,p1\na,1,2\na,3,4\n", "label 'a' appears twice in column 'label'"),
        ("x.csv", b"label,p0,p1\na,-1,2\nb,3,4\n", "column 'p0' must be non-negative"),
        ("x.csv", b"label,p0,p1\na,0,2\nb,0,4\n", "column 'p0' must have positive total mass"),
        ("x.csv", b"p0,p1\n1,2\n3\n", "row 3 has 1 fields, the header has 2"),
        ("x.csv", b"p0,p1\n1,2\ninf,3\n", "column 'p0' must contain only finite numbers"),
        ("x.csv", b"\x00\xff\xfe garbage \x00", "x.csv: not a readable CSV file"),
        ("x.json", b'{"p0": [1, 2], "p1": [1, 2, 3]}', "must have the same length, got 2 and 3"),
        ("x.json", b'{"p0": [1, NaN], "p1": [1, 2]}', "not valid JSON"),
        ("x.json", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        ("x.json", b'{"p0": [1], "q1": [1]}', "missing key 'p1'"),
        ("x.json", b"\xff\xfe", "x.json: not valid JSON"),
        ("x.parquet", b"PAR1 not really", "x.parquet: not a readable Parquet file"),
        ("x.xlsx", b"whatever", "x.xlsx: unknown format '.xlsx'"),
        ("x.csv", b"", "x.csv is empty"),
    ],
)
def test_malformed_uploads_say_what_is_wrong(server, tmp_path, name, body, expected):
    status, data = server.request(f"/api/upload?name={name}", body)
    assert status == 400
    error = json.loads(data)["error"]
    assert expected in error
    # the page shows the library's message: the one read_pair gives for the same file on disk
    path = tmp_path / name
    path.write_bytes(body)
    with pytest.raises(ValueError) as exc:
        ldpopt.read_pair(path, label="label", normalize=True, optional_label=True)
    assert error == str(exc.value)


def test_parquet_and_json_uploads(server):
    import pandas as pd

    buf = io.BytesIO()
    pd.DataFrame({"label": ["x", "y", "z"], "p0": [2, 3, 5], "p1": [5, 3, 2]}).to_parquet(buf)
    status, data = server.request("/api/upload?name=pair.parquet", buf.getvalue())
    assert status == 200 and json.loads(data)["p0"] == [0.2, 0.3, 0.5]
    assert json.loads(data)["labels"] == ["x", "y", "z"]
    status, data = server.request("/api/upload?name=pair.json", b'{"p0": [1, 3], "p1": {"0": 1}}')
    assert status == 400  # a list against a labelled object: the validator's length message
    status, data = server.request(
        "/api/upload?name=pair.json", b'{"p0": {"u": 1, "v": 3}, "p1": {"v": 1, "u": 1}}'
    )
    assert status == 200 and json.loads(data) == {
        "labels": ["u", "v"],
        "p0": [0.25, 0.75],
        "p1": [0.5, 0.5],
        "k": 2,
    }


def _send_then_read(server, path: str, headers: dict, chunks) -> int:
    """POST ``chunks`` (stopping when the server has stopped reading) and return the status."""
    host, port = server.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    conn.putrequest("POST", path)
    for key, value in headers.items():
        conn.putheader(key, value)
    conn.endheaders()
    try:
        for chunk in chunks:
            conn.send(chunk)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the server answered before the end of the body
    status = conn.getresponse().status
    conn.close()
    return status


def test_oversize_bodies_are_refused(server):
    # a declared size over the limit is refused from the headers, before any byte of the body
    size = str(studio_app.MAX_UPLOAD_BYTES + 1)
    assert _send_then_read(server, "/api/upload?name=big.csv", {"Content-Length": size}, []) == 413
    # without a declared size the server counts while it reads, and stops past the limit
    chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
    chunks = [chunk] * (studio_app.MAX_REQUEST_BYTES // 65536 + 2) + [b"0\r\n\r\n"]
    headers = {"Transfer-Encoding": "chunked", "Content-Type": "application/json"}
    assert _send_then_read(server, "/api/design", headers, chunks) == 413


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("eps", "abc", lambda: _validator_message(TypeError, check_eps, "abc")),
        ("eps", "-1", lambda: _validator_message(ValueError, check_eps, -1.0)),
        ("eps", None, lambda: _validator_message(TypeError, check_eps, None)),
        ("max_outputs", "two", lambda: "max_outputs must be a positive integer, got max_outputs='two'"),
        ("max_outputs", "1.5", lambda: "max_outputs must be a positive integer"),
        ("divergence", "nonsense", lambda: "unknown divergence='nonsense'"),
        ("param", "x", lambda: "gamma must be a real number, got 'x'"),
        ("p0", ["a", "b"], lambda: "p0 must be a sequence of real numbers, got the entry 'a'"),
        ("p0", "0.5", lambda: "p0 must be a list of numbers, got str"),
        ("labels", ["a"], lambda: "labels must be a list with one label per symbol"),
    ],
)
def test_non_numeric_fields_get_the_validators_message(server, field, value, message):
    req = {"p0": [1, 2, 3], "p1": [3, 2, 1], "eps": 1, "divergence": "egamma", "param": 1.5, field: value}
    status, res = server.post_json("/api/design", req)
    assert status == 400
    assert message() in res["error"]


def test_other_panels_validate_their_fields(server):
    pair = {"p0": [1, 2, 3], "p1": [3, 2, 1]}
    status, res = server.post_json("/api/deployment", {**pair, "eps": 1, "alpha": "oops"})
    assert status == 400 and "alpha must be a real number" in res["error"]
    status, res = server.post_json("/api/curve", {**pair, "eps_min": 2, "eps_max": 1})
    assert status == 400 and "eps_max must be finite and > eps_min" in res["error"]
    status, res = server.post_json("/api/curve", {**pair, "eps_min": 1, "eps_max": 2, "points": 10**6})
    assert status == 400 and f"between 2 and {core.MAX_CURVE_POINTS}" in res["error"]
    status, res = server.post_json("/api/mechanism", {**pair, "eps": 1, "which": "best"})
    assert status == 400 and "which must be one of optimal, binary, k-RR" in res["error"]
    assert server.request("/api/design", b"{not json", {"Content-Type": "application/json"})[0] == 400
    assert server.request("/api/design", b"[1, 2]", {"Content-Type": "application/json"})[0] == 400
    status, res = server.post_json("/api/pasted", {"p0": "a=1, =2", "p1": "a=1"})
    assert status == 400 and "expected label=value, got '=2'" in res["error"]


def test_huge_k_is_refused_clearly(server):
    k = core.MAX_K + 1
    status, res = server.post_json("/api/design", {"p0": [1] * k, "p1": [1] * k, "eps": 1})
    assert status == 400 and f"at most {core.MAX_K}" in res["error"]
    csv = b"p0,p1\n" + b"1,2\n" * k
    status, data = server.request("/api/upload?name=big.csv", csv)
    assert status == 400 and f"at most {core.MAX_K}" in json.loads(data)["error"]


def test_decision_problem_bayes_and_minimax(server):
    prob = {
        "likelihood": [[0.6, 0.1, 0.2], [0.3, 0.2, 0.2], [0.1, 0.7, 0.6]],
        "loss": [[0, 1], [1, 0], [1, 0.5]],
        "prior": [0.5, 0.25, 0.25],
        "labels": {"inputs": ["lo", "mid", "hi"], "actions": ["keep", "flag"]},
        "name": "toy",
    }
    status, data = server.request("/api/decide?name=toy.json&eps=0.8", json.dumps(prob).encode())
    assert status == 200, data
    res = json.loads(data)
    p = ldpopt.DecisionProblem(
        prob["likelihood"],
        prob["loss"],
        prob["prior"],
        labels=["lo", "mid", "hi"],
        action_labels=["keep", "flag"],
    )
    for out in res["results"]:
        ref = ldpopt.optimal_channel(p, 0.8, risk=out["risk"])
        assert out["value"] == ref.value and np.array_equal(out["matrix"], ref.mechanism.matrix)
        # the channel's own risk, recomputed by the problem's risk evaluator (no solver code)
        risk = p.bayes_risk(out["matrix"]) if out["risk"] == "bayes" else p.minimax_risk(out["matrix"])
        assert out["value"] == pytest.approx(risk, rel=1e-9)
    bad = {**prob, "likelihood": [[0.6, 0.1, 0.2], [0.3, 0.2, 0.2], [0.2, 0.7, 0.6]]}
    status, data = server.request("/api/decide?name=bad.json&eps=1", json.dumps(bad).encode())
    assert status == 400 and "likelihood columns must sum to 1" in json.loads(data)["error"]
    status, data = server.request("/api/decide?name=toy.json&eps=inf", json.dumps(prob).encode())
    assert status == 400 and "eps must be finite here" in json.loads(data)["error"]
    status, data = server.request("/api/decide?name=p.json&eps=1", b'{"likelihood": [[1]], "oops": 1}')
    assert status == 400 and "unknown key 'oops'" in json.loads(data)["error"]


def test_twenty_parallel_designs(server):
    rng = np.random.default_rng(7)
    pairs = [(rng.dirichlet(np.ones(40)), rng.dirichlet(np.ones(40))) for _ in range(20)]
    eps = [0.25 + 0.25 * i for i in range(20)]

    def one(i):
        a, b = pairs[i]
        return server.post_json("/api/design", {"p0": a.tolist(), "p1": b.tolist(), "eps": eps[i]})

    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(one, range(20)))
    for i, (status, res) in enumerate(answers):
        assert status == 200, res
        # the server holds the pair as the validator normalised it
        u, v, _ = check_labelled_pair(*pairs[i], normalize=True)
        assert res["value"] == ldpopt.optimal_mechanism(u, v, eps[i]).value
    assert server.request("/api/options")[0] == 200  # and the server is still there


class _Writes:
    """Audit hook recording every file opened for writing while ``on`` (hooks cannot be removed)."""

    on = False
    seen: list = []
    lock = threading.Lock()

    @classmethod
    def hook(cls, event, args):
        if not cls.on or event != "open":
            return
        path, mode, flags = args
        writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
            isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)
        )
        # numba's compile cache next to the package sources is not data
        if writing and not str(path).endswith((".nbi", ".nbc")):
            with cls.lock:
                cls.seen.append(path)


sys.addaudithook(_Writes.hook)


def test_nothing_is_written_to_disk(server):
    pair = _demo(server)
    csv = b"label,p0,p1\n" + b"".join(f"s{i},{i + 1},{20 - i}\n".encode() for i in range(20))
    _Writes.on = True
    try:
        assert server.request("/api/upload?name=pair.csv", csv)[0] == 200
        assert server.request("/api/upload?name=bad.csv", b"p0,p1\nx,y\n")[0] == 400
        assert server.post_json("/api/design", {**pair, "eps": 2})[0] == 200
        assert server.post_json("/api/curve", {**pair, "eps_min": 1, "eps_max": 2, "points": 3})[0] == 200
        body = json.dumps({**pair, "eps": 2}).encode()
        assert server.request("/api/mechanism", body, {"Content-Type": "application/json"})[0] == 200
    finally:
        _Writes.on = False
    assert _Writes.seen == []


# ---------------------------------------------------------------------------------------------
# the host check: names and IPv4/IPv6 addresses in any spelling of a Host header
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "header, host",
    [
        ("localhost", "localhost"),
        ("LocalHost:8765", "localhost"),
        ("127.0.0.1:8765", "127.0.0.1"),
        ("[::1]:8765", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),  # a bare IPv6 address (no port can follow it)
        ("[0:0:0:0:0:0:0:1]:80", "::1"),
        ("[2001:DB8::5]:8765", "2001:db8::5"),
        ("[::1", None),
        ("[::1]8765", None),
        ("[::1]:", None),
        ("[::1]:x", None),
        ("localhost:", None),
        ("localhost:x", None),
        (":8765", None),
        ("", None),
    ],
)
def test_host_of_header(header, host):
    assert studio_app.host_of_header(header) == host


def _status(app, host_header: str) -> int:
    """The status of GET /api/options with this Host header, straight through the ASGI app."""
    import asyncio

    sent: list[dict] = []
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/api/options",
        "raw_path": b"/api/options",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", host_header.encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8765),
    }

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return sent[0]["status"]


def test_ipv6_hosts_are_served_and_others_refused():
    for host in ("2001:db8::5", "[2001:DB8:0::5]"):  # --host as typed, with or without brackets
        app = studio_app.create_app(host)
        for header in ("[2001:db8::5]:8765", "[2001:db8:0:0::5]", "[::1]:8765", "localhost:8765"):
            assert _status(app, header) == 200, (host, header)
        for header in ("[2001:db8::6]:8765", "attacker.example", "[::1", "2001:db8::5:8765"):
            assert _status(app, header) == 400, (host, header)
    assert _status(studio_app.create_app("::"), "anything.example") == 200  # every address: no check


def test_page_url_brackets_ipv6_and_reads_wildcards_as_this_machine():
    assert studio_app.page_url("127.0.0.1", 8765) == "http://127.0.0.1:8765/"
    assert studio_app.page_url("localhost", 1) == "http://localhost:1/"
    assert studio_app.page_url("::1", 8765) == studio_app.page_url("[::1]", 8765) == "http://[::1]:8765/"
    assert studio_app.page_url("0.0.0.0", 80) == "http://127.0.0.1:80/"
    assert studio_app.page_url("::", 80) == "http://[::1]:80/"


COUNTS = b"category,normal,fraud\npage_view,3100,1200\nsearch,1400,600\ngift_card,0,1500\nreview_post,900,0\n"


def test_columns_and_upload_with_chosen_columns(server):
    status, data = server.request("/api/columns?name=counts.csv", COUNTS)
    assert status == 200
    cols = json.loads(data)
    assert cols["columns"] == ["category", "normal", "fraud"]
    assert cols["numeric"] == [False, True, True]
    assert cols["guess"] == {"label": "category", "p0": "normal", "p1": "fraud"}
    # without a choice the file is refused as before (no p0/p1 columns), naming its columns
    status, data = server.request("/api/upload?name=counts.csv", COUNTS)
    assert status == 400 and "category, normal, fraud" in json.loads(data)["error"]
    status, data = server.request("/api/upload?name=counts.csv&label=category&p0=normal&p1=fraud", COUNTS)
    assert status == 200
    pair = json.loads(data)
    ref = ldpopt.read_pair(COUNTS, "normal", "fraud", "category", normalize=True, filename="counts.csv")
    assert pair["labels"] == list(ref.labels)
    assert pair["p0"] == ref.p0.tolist() and pair["p1"] == ref.p1.tolist()
    # an empty label: no labels; a column that is not there: the reader's message
    status, data = server.request("/api/upload?name=counts.csv&label=&p0=fraud&p1=normal", COUNTS)
    assert status == 200 and json.loads(data)["labels"] == ["0", "1", "2", "3"]
    status, data = server.request("/api/upload?name=counts.csv&p0=nope&p1=fraud", COUNTS)
    assert status == 400 and "missing column(s) nope" in json.loads(data)["error"]


def _reports_csv(mech, n: int, seed: int) -> tuple[str, list]:
    rng = np.random.default_rng(seed)
    labels = list(DEMO_P0)
    mix = np.array([0.7 * DEMO_P0[x] + 0.3 * DEMO_P1[x] for x in labels], dtype=float)
    x = rng.choice(len(labels), size=n, p=mix / mix.sum())
    reports = list(mech.privatize([labels[i] for i in x], rng=rng))
    return "user_id,report\n" + "".join(f"u{i},{r}\n" for i, r in enumerate(reports)), reports


def test_reports_match_the_library(server):
    from ldpopt.deploy.sampling import report_counts

    demo = _demo(server)
    p0 = dict(zip(demo["labels"], demo["p0"], strict=True))
    p1 = dict(zip(demo["labels"], demo["p1"], strict=True))
    mech = ldpopt.optimal_mechanism(p0, p1, 1.5).mechanism
    text, reports = _reports_csv(mech, 3000, seed=11)
    req = dict(demo, eps=1.5, divergence="kl", reports=text, alpha=0.01, delta=1e-7, confidence=0.9)
    status, res = server.post_json("/api/reports", req)
    assert status == 200, res
    counts = report_counts(mech, reports)
    test = ldpopt.LikelihoodRatioTest(mech, p0, p1, alpha=0.01).decide_counts(counts)
    est = ldpopt.mixture_proportion(mech, p0=p0, p1=p1, reports=None, counts=counts, confidence=0.9)
    assert res["n"] == 3000 and [c["count"] for c in res["counts"]] == counts.tolist()
    assert res["test"]["decision"] == test.decision and res["test"]["llr"] == test.llr
    assert res["test"]["p_value"] == test.p_value
    assert (res["estimate"]["value"], res["estimate"]["lower"]) == (est.value, est.lower)
    assert res["shuffle"]["value"] == ldpopt.central_epsilon(1.5, 3000, 1e-7).value
    # the mean LLR under P0 is minus n times D(M0 || M1), computed here from the two output laws
    m0, m1 = mech.output_distributions(list(p0.values()), list(p1.values()))
    kl01 = float(np.sum(m0 * np.log(m0 / m1)))
    assert abs(res["test"]["expected_llr_p0"] + 3000 * kl01) <= 1e-9 * 3000 * kl01
    # an uploaded mechanism file (k-RR, with its pair) instead of the design
    rr = ldpopt.randomized_response(len(p0), 1.0, labels=list(p0))
    text_rr, reports_rr = _reports_csv(rr, 400, seed=5)
    mfile = ldpopt._mechfile.mechanism_file_text(rr, p0=list(p0.values()), p1=list(p1.values()))
    status, res = server.post_json("/api/reports", dict(demo, eps=1.5, reports=text_rr, mechanism_file=mfile))
    assert status == 200, res
    est = ldpopt.mixture_proportion(rr, p0=p0, p1=p1, reports=reports_rr)
    assert res["source"] == "uploaded mechanism file" and res["estimate"]["value"] == est.value


@pytest.mark.parametrize(
    "reports, message",
    [
        ("", "upload a CSV of reports"),
        ("report\n", "a header but no reports"),
        ("a,b\n1,2\n", "no column 'report'"),
        ("report\n0\n99\n", "row 3: '99' in column 'report' is not an output"),
    ],
)
def test_bad_reports_say_what_is_wrong(server, reports, message):
    demo = _demo(server)
    status, res = server.post_json("/api/reports", dict(demo, eps=1, reports=reports))
    assert status == 400 and message in res["error"]


def test_bad_mechanism_file_in_reports(server):
    demo = _demo(server)
    status, res = server.post_json(
        "/api/reports", dict(demo, eps=1, reports="report\n0\n", mechanism_file="{}", mechanism_name="M.json")
    )
    assert status == 400 and res["error"].startswith("M.json: not a mechanism file")


def test_curve_k_rr_is_the_matrix_utility(server):
    # the curve computes k-RR's output laws without its k x k matrix: the same values as the
    # mechanism's matrix product, to rounding (a few ulps of each output mass, 1e-12 relative)
    pair = _demo(server)
    for div in ("kl", "tv", "chernoff"):
        req = {**pair, "eps_min": "0.25", "eps_max": "6", "points": "5", "divergence": div}
        status, res = server.post_json("/api/curve", req)
        assert status == 200, res
        for e, value in zip(res["eps"], res["value"]["k-RR"], strict=True):
            ref = ldpopt.randomized_response(12, e).utility(pair["p0"], pair["p1"], div)
            assert value == pytest.approx(ref, rel=1e-12)
