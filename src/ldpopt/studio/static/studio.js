// ldpopt studio: the page keeps the validated pair and sends it with every request; the server
// validates and computes, and its error messages are shown as they are.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { pair: null, design: null, designSeq: 0, options: null, upload: null, reports: null, mechFile: null };
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

let dataSeq = 0;
async function loadData(promise, source) {
  const seq = ++dataSeq;  // the latest data asked for wins (the demo at start, then an upload)
  try {
    const pair = await promise;
    if (seq === dataSeq) setPair(pair, source);
  } catch (e) { if (seq === dataSeq) show("data-error", e.message); }
}

async function uploadFile(file, endpoint, extra) {
  const buffer = await file.arrayBuffer();
  const query = new URLSearchParams(Object.assign({ name: file.name }, extra || {}));
  return call(`${endpoint}?${query}`, buffer, true);
}

// an uploaded pair file: its columns are offered in three pickers, set to the server's guess
function fillColumns(id, columns, chosen, allowNone) {
  const sel = $(id);
  sel.replaceChildren();
  if (allowNone) sel.appendChild(new Option("(none)", ""));
  for (const c of columns) sel.appendChild(new Option(c, c));
  sel.value = chosen || "";
}

async function loadUpload() {
  const up = state.upload;
  const extra = { label: $("col-label").value, p0: $("col-p0").value, p1: $("col-p1").value };
  await loadData(call(`/api/upload?${new URLSearchParams(Object.assign({ name: up.name }, extra))}`, up.buffer, true), up.name);
}

async function chooseUpload(file) {
  try {
    const buffer = await file.arrayBuffer();
    const cols = await call(`/api/columns?${new URLSearchParams({ name: file.name })}`, buffer, true);
    state.upload = { name: file.name, buffer };
    $("columns-file").textContent = file.name;
    fillColumns("col-label", cols.columns, cols.guess.label, true);
    fillColumns("col-p0", cols.columns, cols.guess.p0, false);
    fillColumns("col-p1", cols.columns, cols.guess.p1, false);
    $("columns-row").hidden = false;
    await loadUpload();
  } catch (e) { show("data-error", e.message); }
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

async function runTarget() {
  if (!state.pair) { show("deploy-error", "load data first"); return; }
  const summary = $("target-summary");
  summary.dataset.state = "busy";
  summary.textContent = "searching...";
  try {
    // the target search designs for the Chernoff test unless the page's utility is KL (the
    // summary names the design used)
    const design = $("divergence").value === "kl" ? "kl" : "chernoff";
    const res = await call("/api/target", Object.assign(designFields(),
      { n: $("target-n").value, alpha: $("alpha").value, beta: $("beta").value, divergence: design }));
    show("deploy-error", "");
    summary.dataset.eps = res.eps;
    summary.textContent = `smallest eps = ${FMT(res.eps)} (in (${FMT(res.eps_below)}, ${FMT(res.eps)}]): ` +
      `type-II error ${FMT(res.type_ii)} at level ${FMT(res.size)} with ${res.n} reports (${res.divergence} design, ${res.num_outputs} outputs)`;
    summary.dataset.state = "ready";
  } catch (e) { summary.dataset.state = "error"; summary.textContent = ""; show("deploy-error", e.message); }
}

function base64(buffer) {
  const bytes = new Uint8Array(buffer);
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  return btoa(text);
}

async function checkMechanism(source) {
  const summary = $("check-summary");
  summary.dataset.state = "busy";
  const body = Object.assign({}, state.pair ? designFields() : {}, source, { normalize: $("check-normalize").checked });
  try {
    const res = await call("/api/check", body);
    show("check-error", "");
    fillTable("check-results", [
      ["eps (exact level)", res.epsilon],
      ["proven upper bound", res.epsilon_upper],
      ["worst output", res.worst_output],
      ["worst input pair", res.worst_inputs.join(" vs ")],
      ["largest ratio (exact)", res.max_ratio === null ? "infinite" : res.max_ratio],
      ["inputs x outputs", `${res.num_inputs} x ${res.num_outputs}`],
      ["eps stated in the file", res.file_eps],
    ]);
    const b = res.beside;
    fillTable("check-beside", b.rows ? b.rows.map((r) => [r.mechanism, r.outputs, r.value, r.blocks]) : []);
    summary.dataset.eps = res.epsilon;
    summary.dataset.upper = res.epsilon_upper;
    summary.dataset.optimal = b.rows ? b.rows[1].value : "";
    summary.dataset.checked = b.rows ? b.rows[0].value : "";
    summary.textContent = `eps = ${res.epsilon === "inf" ? "inf" : FMT(res.epsilon)}: ${res.message}` +
      (b.rows ? ` | ${b.divergence}: checked ${FMT(b.rows[0].value)}, optimal ${FMT(b.rows[1].value)} at the same eps` : ` | ${b.note}`);
    summary.dataset.state = "ready";
  } catch (e) { summary.dataset.state = "error"; summary.textContent = ""; show("check-error", e.message); }
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
// 6. reports
// ---------------------------------------------------------------------------------------------
async function analyseReports() {
  const summary = $("reports-summary");
  if (state.reports === null) { show("reports-error", "upload the reports first"); return; }
  if (!state.pair && !state.mechFile) { show("reports-error", "load data or a mechanism file first"); return; }
  summary.dataset.state = "busy";
  const req = Object.assign(designFields(), {
    which: $("reports-which").value, reports: state.reports.text,
    alpha: $("reports-alpha").value, confidence: $("reports-confidence").value, delta: $("reports-delta").value,
  });
  if (state.mechFile) Object.assign(req, { mechanism_file: state.mechFile.text, mechanism_name: state.mechFile.name });
  try {
    const r = await call("/api/reports", req);
    show("reports-error", "");
    const t = r.test, e = r.estimate, sh = r.shuffle;
    summary.textContent = `${r.n} reports of ${state.reports.name}, mechanism: ${r.source} (eps = ${FMT(r.eps)})`;
    summary.dataset.n = String(r.n);
    summary.dataset.decision = String(t.decision);
    summary.dataset.estimate = String(e.value);
    summary.dataset.central = String(sh.value);
    fillTable("reports-results", [
      [`test of H0: P0 at alpha = ${r.alpha}`, t.verdict, `p-value ${FMT(t.p_value)}; LLR ${FMT(t.llr)} (mean ${FMT(t.expected_llr_p0)} under P0, ${FMT(t.expected_llr_p1)} under P1): ${t.direction}`],
      ["proportion of P1 in a mixture", e.value, `${Math.round(e.confidence * 100)}% interval [${FMT(e.lower)}, ${FMT(e.upper)}]`],
      [`central eps once shuffled (delta = ${sh.delta})`, sh.value, sh.value === null ? sh.message : `${sh.n} reports, local eps ${FMT(sh.eps0)}, ${sh.method} bound`],
      ["reports per output", r.counts.map((c) => `${c.output}: ${c.count}`).join(", "), ""],
    ]);
    summary.dataset.state = "ready";
  } catch (err) {
    show("reports-error", err.message);
    summary.dataset.state = "error";
    fillTable("reports-results", []);
  }
}

async function readText(file) { return { name: file.name, text: await file.text() }; }

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
    if (file) chooseUpload(file);
    ev.target.value = "";
  });
  for (const id of ["col-label", "col-p0", "col-p1"]) $(id).addEventListener("change", () => { if (state.upload) loadUpload(); });
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
  $("reports-file").addEventListener("change", async (ev) => {
    const file = ev.target.files[0];
    ev.target.value = "";
    if (file) { state.reports = await readText(file); analyseReports(); }
  });
  $("reports-mechanism-file").addEventListener("change", async (ev) => {
    const file = ev.target.files[0];
    ev.target.value = "";
    if (!file) return;
    state.mechFile = await readText(file);
    $("reports-which").disabled = true;
    $("reports-mechanism-clear").hidden = false;
    $("reports-mechanism-clear").textContent = `use the design, not ${file.name}`;
    if (state.reports) analyseReports();
  });
  $("reports-mechanism-clear").addEventListener("click", () => {
    state.mechFile = null;
    $("reports-which").disabled = false;
    $("reports-mechanism-clear").hidden = true;
    if (state.reports) analyseReports();
  });
  $("analyse-reports").addEventListener("click", analyseReports);
  $("target-run").addEventListener("click", runTarget);
  $("check-run").addEventListener("click", () => checkMechanism({ text: $("check-matrix").value }));
  $("check-file").addEventListener("change", async (ev) => {
    const file = ev.target.files[0];
    ev.target.value = "";
    if (file) checkMechanism({ name: file.name, file: base64(await file.arrayBuffer()) });
  });
  $("reports-which").addEventListener("change", () => { if (state.reports) analyseReports(); });
  // open on something: the built-in demo, as if its button had been pressed
  await loadData(call("/api/demo"), "demo");
  document.body.dataset.ready = "1";
}

init().catch((e) => show("data-error", `cannot start: ${e.message}`));
