// ldpopt studio: the page keeps the validated pair and sends it with every request; the server
// validates and computes, and its error messages are shown as they are.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { pair: null, design: null, designSeq: 0, options: null };
const PLOT_CONFIG = { displaylogo: false, responsive: true, displayModeBar: false };
const FMT = (v) => (v === null || v === undefined ? "-" : Number(v).toPrecision(6).replace(/\.?0+(e|$)/, "$1"));

async function call(path, body, raw) {
  const init = { method: body === undefined ? "GET" : "POST" };
  if (body !== undefined) {
    init.body = raw ? body : JSON.stringify(body);
    init.headers = { "Content-Type": raw ? "application/octet-stream" : "application/json" };
  }
  const resp = await fetch(path, init);
  const text = await resp.text();
  let data = null;
  try { data = JSON.parse(text); } catch (e) { data = null; }
  if (!resp.ok) throw new Error((data && data.error) || `${resp.status} ${resp.statusText}`);
  return data === null ? text : data;
}

function show(id, message) { $(id).textContent = message || ""; }

function designFields() {
  const f = {
    eps: $("eps").value, divergence: $("divergence").value,
    max_outputs: $("max-outputs").value, param: $("param").value,
  };
  return Object.assign({}, state.pair, f);
}

function fillTable(id, rows) {
  const body = $(id).querySelector("tbody");
  body.replaceChildren();
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const cell of row) {
      const td = document.createElement("td");
      if (typeof cell === "number") td.className = "num";
      td.textContent = typeof cell === "number" ? FMT(cell) : (cell === null ? "-" : String(cell));
      tr.appendChild(td);
    }
    body.appendChild(tr);
  }
}

function heatmap(div, matrix, rows, title) {
  if (!matrix) { div.textContent = "channel too large to draw"; return; }
  const cols = matrix[0].map((_, j) => `y=${j}`);
  Plotly.react(div, [{ z: matrix, x: cols, y: rows, type: "heatmap", colorscale: "Blues", reversescale: true, zmin: 0, zmax: 1,
    hovertemplate: "x=%{y}<br>%{x}<br>Q=%{z:.4f}<extra></extra>" }],
    { title: { text: title, font: { size: 13 } }, margin: { l: 120, r: 10, t: 30, b: 30 },
      height: Math.min(620, 90 + 16 * rows.length), yaxis: { autorange: "reversed", automargin: true } },
    PLOT_CONFIG);
}

// ---------------------------------------------------------------------------------------------
// 1. data
// ---------------------------------------------------------------------------------------------
function setPair(pair, source) {
  state.pair = { p0: pair.p0, p1: pair.p1, labels: pair.labels };
  const shown = pair.labels.slice(0, 8).join(", ") + (pair.k > 8 ? ", ..." : "");
  $("data-status").innerHTML = "";
  $("data-status").append(`${source}: `, Object.assign(document.createElement("b"), { textContent: `k = ${pair.k}` }),
    ` symbols (${shown})`);
  $("data-status").dataset.k = pair.k;
  show("data-error", "");
  $("design-summary").dataset.state = "busy";  // the design shown is the previous data's
  redesign();
  drawCurve();
}

async function loadData(promise, source) {
  try { setPair(await promise, source); } catch (e) { show("data-error", e.message); }
}

async function uploadFile(file, endpoint, extra) {
  const buffer = await file.arrayBuffer();
  const query = new URLSearchParams(Object.assign({ name: file.name }, extra || {}));
  return call(`${endpoint}?${query}`, buffer, true);
}

// ---------------------------------------------------------------------------------------------
// 2. design
// ---------------------------------------------------------------------------------------------
let timer = null;
function redesign() {
  $("design-summary").dataset.state = "busy";
  clearTimeout(timer);
  timer = setTimeout(runDesign, 60);
}

async function runDesign() {
  if (!state.pair) return;
  const seq = ++state.designSeq;
  const summary = $("design-summary");
  summary.dataset.state = "busy";
  try {
    const res = await call("/api/design", designFields());
    if (seq !== state.designSeq) return;
    state.design = res;
    show("design-error", "");
    summary.innerHTML = "";
    summary.append("value ", Object.assign(document.createElement("b"), { id: "design-value", textContent: FMT(res.value) }),
      ` (${res.divergence}), normalised ${FMT(res.normalised)}, ${res.num_outputs} output(s), method ${res.method}`);
    summary.dataset.eps = String(res.eps);
    summary.dataset.value = String(res.value);
    fillTable("comparison", res.comparison.map((r) => [r.mechanism, r.outputs, r.value, r.normalised]));
    fillTable("partition", res.partition.map((block, j) => [String(j), block.join(", ")]));
    heatmap($("channel"), res.matrix, res.labels, `optimal channel at eps = ${res.eps}`);
    summary.dataset.state = "ready";
  } catch (e) {
    if (seq !== state.designSeq) return;
    state.design = null;
    show("design-error", e.message);
    summary.dataset.state = "error";
  }
}

// ---------------------------------------------------------------------------------------------
// 3. trade-off
// ---------------------------------------------------------------------------------------------
async function drawCurve() {
  if (!state.pair) return;
  const req = Object.assign(designFields(), {
    eps_min: $("curve-min").value, eps_max: $("curve-max").value, points: $("curve-points").value,
  });
  try {
    const res = await call("/api/curve", req);
    show("curve-error", "");
    const norm = res.input_divergence !== null && res.input_divergence > 0;
    const ys = norm ? res.normalised : res.value;
    const traces = Object.keys(ys).map((name) => ({ x: res.eps, y: ys[name], name, mode: "lines" }));
    const layout = (title, ytitle) => ({ title: { text: title, font: { size: 13 } }, height: 300,
      margin: { l: 55, r: 10, t: 30, b: 40 }, xaxis: { title: { text: "eps" } }, yaxis: { title: { text: ytitle } } });
    Plotly.react($("curve"), traces, layout(`utility vs eps (${res.divergence})`, norm ? "normalised utility" : "value"),
      PLOT_CONFIG);
    Plotly.react($("outputs"), [{ x: res.eps, y: res.num_outputs, mode: "lines", line: { shape: "hv" }, name: "outputs" }],
      layout("outputs of the optimal mechanism", "outputs"), PLOT_CONFIG);
  } catch (e) { show("curve-error", e.message); }
}

// ---------------------------------------------------------------------------------------------
// 4. deployment
// ---------------------------------------------------------------------------------------------
function download(name, text) {
  const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
  const a = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

async function sampleSizes() {
  if (!state.pair) { show("deploy-error", "load data first"); return; }
  try {
    const res = await call("/api/deployment", Object.assign(designFields(), { alpha: $("alpha").value, beta: $("beta").value }));
    show("deploy-error", "");
    fillTable("samplesize", res.rows.map((r) => [r.mechanism, r.n, r.method || "-", r.chernoff_n, r.stein_n, r.message || ""]));
  } catch (e) { show("deploy-error", e.message); }
}

async function downloadMechanism() {
  if (!state.pair) { show("deploy-error", "load data first"); return; }
  try {
    const which = $("which").value;
    const text = await call("/api/mechanism", Object.assign(designFields(), { which }));
    show("deploy-error", "");
    download(which === "optimal" ? "mechanism.json" : `mechanism-${which}.json`, typeof text === "string" ? text : JSON.stringify(text));
  } catch (e) { show("deploy-error", e.message); }
}

function downloadDesign() {
  if (!state.design) { show("deploy-error", "no design yet"); return; }
  const inputs = Object.assign(designFields());
  download("design.json", JSON.stringify({ inputs, design: state.design }, null, 2));
}

// ---------------------------------------------------------------------------------------------
// 5. decision problems
// ---------------------------------------------------------------------------------------------
async function decide(file) {
  const box = $("decide-results");
  try {
    const res = await uploadFile(file, "/api/decide", { eps: $("decide-eps").value });
    show("decide-error", "");
    $("decide-summary").textContent =
      `${res.name}: ${res.inputs} inputs, ${res.parameters} parameters, ${res.actions} actions, eps = ${res.eps}`;
    box.replaceChildren();
    for (const r of res.results) {
      const div = document.createElement("div");
      const head = document.createElement("h3");
      head.textContent = `${r.risk} risk ${FMT(r.value)} (${r.num_outputs} outputs, ${r.method}; ${r.message})`;
      head.className = "decide-value";
      head.dataset.risk = r.risk;
      head.dataset.value = String(r.value);
      const chart = document.createElement("div");
      div.append(head, chart);
      box.appendChild(div);
      heatmap(chart, r.matrix, r.inputs, `${r.risk}: optimal channel`);
    }
  } catch (e) { show("decide-error", e.message); box.replaceChildren(); $("decide-summary").textContent = ""; }
}

// ---------------------------------------------------------------------------------------------
// wiring
// ---------------------------------------------------------------------------------------------
function onDivergence() {
  const fam = state.options.families[$("divergence").value];
  $("param-label").hidden = !fam;
  if (fam) { $("param-name").textContent = fam.parameter; if (!$("param").value) $("param").value = fam.default; }
  redesign();
  drawCurve();
}

async function init() {
  state.options = await call("/api/options");
  $("version").textContent = `ldpopt ${state.options.version}`;
  for (const name of state.options.divergences) $("divergence").appendChild(new Option(name, name));
  $("load-demo").addEventListener("click", () => loadData(call("/api/demo"), "demo"));
  $("upload-file").addEventListener("change", (ev) => {
    const file = ev.target.files[0];
    if (file) loadData(uploadFile(file, "/api/upload"), file.name);
    ev.target.value = "";
  });
  $("use-pasted").addEventListener("click", () =>
    loadData(call("/api/pasted", { p0: $("paste-p0").value, p1: $("paste-p1").value }), "pasted"));
  $("eps-slider").addEventListener("input", () => { $("eps").value = $("eps-slider").value; redesign(); });
  $("eps").addEventListener("input", () => {
    const v = Number($("eps").value);
    if (Number.isFinite(v)) $("eps-slider").value = Math.min(10, Math.max(0.01, v));
    redesign();
  });
  $("divergence").addEventListener("change", onDivergence);
  for (const id of ["param", "max-outputs"]) $(id).addEventListener("input", () => { redesign(); drawCurve(); });
  $("draw-curve").addEventListener("click", drawCurve);
  $("sample-size").addEventListener("click", sampleSizes);
  $("download-mechanism").addEventListener("click", downloadMechanism);
  $("download-design").addEventListener("click", downloadDesign);
  $("problem-file").addEventListener("change", (ev) => {
    const file = ev.target.files[0];
    if (file) decide(file);
    ev.target.value = "";
  });
  document.body.dataset.ready = "1";
}

init().catch((e) => show("data-error", `cannot start: ${e.message}`));
