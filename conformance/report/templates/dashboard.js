// The dashboard: draws the matrix from the embedded data, filters it, and opens a cell's checks and worst
// cases on demand.  Every string from the run is set as text, never as HTML.  The view lives in the URL's
// hash, so a link reopens the same filters and cell.
"use strict";
const DATA = JSON.parse(document.getElementById("data").textContent);
const NEW = ["fail", "error", "interrupted", "resource"];
const RANK = ["fail", "error", "interrupted", "resource", "known_issue", "warning", "skipped", "pass"];
const KEYS = ["verdict", "library", "target", "dtype", "q", "issue", "cell"];
const state = {};
const el = (tag, attrs = {}, ...children) => {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "text") node.textContent = v; else if (k === "class") node.className = v; else node.setAttribute(k, v);
  }
  for (const child of children) if (child != null) node.append(child);
  return node;
};
const worst = (verdicts) => verdicts.reduce((a, b) => (RANK.indexOf(b) < RANK.indexOf(a) ? b : a), "pass");
const label = (v) => v.replace("_", " ");

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  for (const key of KEYS) state[key] = params.get(key) || "";
  for (const key of ["verdict", "library", "target", "dtype"]) document.getElementById("f-" + key).value = state[key];
  document.getElementById("f-q").value = state.q;
}
function writeHash() {
  const params = new URLSearchParams();
  for (const key of KEYS) if (state[key]) params.set(key, state[key]);
  history.replaceState(null, "", "#" + params.toString());
}

function fillSelect(id, values) {
  const select = document.getElementById(id);
  for (const value of values) select.append(el("option", { value, text: value }));
}

function buildControls() {
  fillSelect("f-library", [...new Set(DATA.matrix.rows.map((r) => r.library).filter(Boolean))].sort());
  fillSelect("f-target", DATA.matrix.columns.map((c) => (c.machine ? c.machine + " " : "") + c.target));
  fillSelect("f-dtype", [...new Set(DATA.matrix.rows.map((r) => r.dtype))].sort());
  for (const key of ["verdict", "library", "target", "dtype"]) {
    document.getElementById("f-" + key).addEventListener("change", (e) => { state[key] = e.target.value; update(); });
  }
  document.getElementById("f-q").addEventListener("input", (e) => { state.q = e.target.value.trim(); update(); });
  document.getElementById("f-clear").addEventListener("click", () => {
    for (const key of KEYS) state[key] = "";
    applyState();
  });
}
function applyState() { writeHash(); readHash(); update(); }  // the controls show the state, then the matrix

const rowsById = {};
const familyRows = new Map();  // family -> its header row (open or closed)
function buildMatrix() {
  const table = document.getElementById("matrix");
  const head = el("tr", {}, el("th", { text: "family / op" }), el("th", { text: "library" }), el("th", { text: "dtype, mode" }));
  for (const c of DATA.matrix.columns) {
    const th = el("th", { "data-column": c.id, title: c.device || "" }, (c.machine ? c.machine + " " : "") + c.target);
    if (c.virtual) th.append(" ", el("span", { class: "virtual", text: "(virtual)" }));
    head.append(th);
  }
  table.append(el("thead", {}, head));
  const body = el("tbody");
  const families = new Map();
  for (const row of DATA.matrix.rows) {
    rowsById[row.id] = row;
    if (!families.has(row.family)) families.set(row.family, []);
    families.get(row.family).push(row);
  }
  for (const [family, rows] of families) {
    const failing = rows.some((r) => NEW.includes(r.verdict));  // a family with new failures opens by itself
    const tr = el("tr", { class: failing ? "family open" : "family", "data-family": family });
    tr.append(el("td", { class: "name", colspan: "3", text: "▸ " + (family || "(no family)") + " (" + rows.length + ")" }));
    for (const c of DATA.matrix.columns) {
      const cells = rows.map((r) => r.cells[c.id]).filter(Boolean);
      const v = cells.length ? worst(cells.map((x) => x.verdict)) : "absent";
      const n = cells.filter((x) => x.verdict === v && v !== "pass").length;
      tr.append(el("td", { class: "cell v-" + v, "data-column": c.id, title: label(v), text: n ? String(n) : "" }));
    }
    familyRows.set(family, tr);
    tr.firstChild.addEventListener("click", () => { tr.classList.toggle("open"); update(); });
    body.append(tr);
    for (const row of rows) {
      const vr = el("tr", { class: "variant", "data-row": row.id, "data-family": family, "data-verdict": row.verdict });
      vr.append(el("td", { class: "name", text: row.op }), el("td", { text: row.library }), el("td", { text: row.dtype + ", " + row.mode }));
      for (const c of DATA.matrix.columns) {
        const cell = row.cells[c.id];
        if (!cell) { vr.append(el("td", { class: "cell v-absent", "data-column": c.id })); continue; }
        const td = el("td", {
          class: "cell v-" + cell.verdict, "data-column": c.id, "data-cell": row.id + "." + c.id, "data-verdict": cell.verdict,
          title: label(cell.verdict) + (cell.number ? ": " + cell.number + " cases" : ""),
          text: cell.number ? String(cell.number) : "",
        });
        td.addEventListener("click", () => { state.cell = row.id + "." + c.id; update(); });
        vr.append(td);
      }
      body.append(vr);
    }
  }
  table.append(body);
}

function columnShown(c) { return !state.target || state.target === (c.machine ? c.machine + " " : "") + c.target; }
function verdictMatches(v) {
  if (!state.verdict) return true;
  return state.verdict === "new" ? NEW.includes(v) : v === state.verdict;
}
function issueCells() {
  const finding = DATA.findings.find((f) => f.id === state.issue);
  return finding ? new Set(finding.cells) : null;
}

function update() {
  writeHash();
  const filtering = state.verdict || state.library || state.dtype || state.q || state.issue || state.target;
  const query = state.q.toLowerCase();
  const onlyCells = state.issue ? issueCells() || new Set() : null;
  const visibleColumns = new Set(DATA.matrix.columns.filter(columnShown).map((c) => c.id));
  for (const node of document.querySelectorAll("#matrix [data-column]")) node.hidden = !visibleColumns.has(node.dataset.column);
  const familiesWithRows = new Set();
  let shown = 0;
  for (const tr of document.querySelectorAll("#matrix tr.variant")) {
    const row = rowsById[tr.dataset.row];
    let match = (!state.library || row.library === state.library) && (!state.dtype || row.dtype === state.dtype);
    if (match && query) match = [row.family, row.op, row.library, row.mode].join(" ").toLowerCase().includes(query);
    let anyCell = false;
    for (const td of tr.querySelectorAll("td.cell[data-cell]")) {
      const ok = visibleColumns.has(td.dataset.column) && verdictMatches(td.dataset.verdict) && (!onlyCells || onlyCells.has(td.dataset.cell));
      td.classList.toggle("dim", !ok);
      td.classList.toggle("selected", td.dataset.cell === state.cell);
      anyCell = anyCell || ok;
    }
    match = match && anyCell;
    const open = familyRows.get(row.family).classList.contains("open");
    const selected = state.cell.startsWith(row.id + ".");
    tr.hidden = !(match && (filtering || open || selected));
    if (match) familiesWithRows.add(row.family);
    if (!tr.hidden) shown += 1;
  }
  for (const tr of document.querySelectorAll("#matrix tr.family")) {
    tr.hidden = filtering && !familiesWithRows.has(tr.dataset.family);
    tr.firstChild.textContent = (tr.classList.contains("open") || filtering ? "▾ " : "▸ ") + tr.firstChild.textContent.slice(2);
  }
  document.getElementById("matrix-empty").hidden = !(filtering && shown === 0);
  drill();
}

function picture(p, text) {
  return el("figure", {}, el("img", { src: p.src, width: p.width, height: p.height, alt: text }), el("figcaption", { text }));
}

function drill() {
  const panel = document.getElementById("drill");
  panel.replaceChildren();
  panel.hidden = !state.cell;
  if (!state.cell) return;
  const [rowId, columnId] = state.cell.split(".");
  const row = rowsById[rowId];
  const column = DATA.matrix.columns.find((c) => c.id === columnId);
  const cell = row && row.cells[columnId];
  if (!cell || !column) { panel.append(el("p", { text: "This link names a cell the run does not have." })); return; }
  const close = el("button", { type: "button", id: "drill-close", text: "close" });
  close.addEventListener("click", () => { state.cell = ""; update(); });
  panel.append(el("h2", { id: "drill-title", text: `${row.op} [${row.dtype}, ${row.mode}] on ${column.machine ? column.machine + " " : ""}${column.target}: ${label(cell.verdict)}` }), close);
  const checks = el("table", { id: "drill-checks" }, el("tr", {}, ...["check", "verdict", "cases", "worst |diff| / atol", "known issues", "notes"].map((t) => el("th", { text: t }))));
  for (const c of cell.checks) {
    const counts = Object.entries(c.counts).map(([k, v]) => `${v} ${label(k)}`).join(", ");
    const notes = [c.warning, c.note, c.behaviours && Object.entries(c.behaviours).map(([k, v]) => `${k} (${v})`).join("; ")].filter(Boolean).join("; ");
    checks.append(el("tr", { class: "v-" + c.verdict }, el("td", { text: c.check }), el("td", { text: label(c.verdict) }),
      el("td", { text: counts }), el("td", { text: c.worst ? `${Number(c.worst.max_abs).toPrecision(4)} / ${c.worst.atol}${c.worst.uncalibrated ? " (uncalibrated)" : ""}` : "" }),
      el("td", { text: c.known_issues.join(", ") }), el("td", { text: notes })));
  }
  panel.append(checks);
  const cases = DATA.details.filter((d) => d.cell === state.cell);
  if (!cases.length) panel.append(el("p", { text: "No failing or known-issue case of this cell was kept." }));
  for (const d of cases) {
    const box = el("section", { class: "case v-border-" + d.verdict });
    box.append(el("h3", { text: `${d.check}: ${label(d.verdict)}${d.known_issue ? " (" + d.known_issue + ")" : ""}` }), el("p", { class: "message", text: d.message }));
    if (d.damaged) box.append(el("p", { class: "damaged", text: "Pictures unavailable: " + d.damaged + "." }));
    if (d.panels && d.panels.length) {
      const figures = el("div", { class: "figures" }, ...d.panels.map((p) => picture(p.image, p.label)));
      if (d.heatmap) {
        const scale = el("span", { class: "scale" }, el("span", { text: "0" }), el("span", { text: d.scale || "" }));
        figures.append(el("figure", {}, el("img", { src: d.heatmap.src, width: d.heatmap.width, height: d.heatmap.height, alt: "difference" }),
          el("figcaption", {}, `|output − ${d.against}| (amplified)`, el("br"), scale)));
      }
      box.append(figures);
      if (d.crops && d.crops.length) box.append(el("div", { class: "figures" }, ...d.crops.map((p) => picture(p.image, p.label + " crop"))));
      if (d.histogram) box.append(el("div", { class: "figures" }, picture(d.histogram, "histogram")));
    } else if (d.pictures_left_out) {
      box.append(el("p", { text: "Pictures are drawn for failures and for one case of each known issue." }));
    }
    if (d.tolerance) box.append(el("p", { text: d.tolerance }));
    if (d.case) box.append(el("details", {}, el("summary", { text: "case" }), el("pre", { text: JSON.stringify(d.case, null, 1) })));
    if (d.repro) box.append(el("p", { text: "Rerun:" }), el("code", { class: "repro", text: d.repro }));
    if (d.script) box.append(el("p", { text: "Repro script (needs torch and the library, not conformance):" }), el("code", { class: "repro", text: d.script }));
    if (d.traceback) box.append(el("details", {}, el("summary", { text: "traceback" }), el("pre", { text: d.traceback })));
    panel.append(box);
  }
  if (!document.body.dataset.loaded) panel.scrollIntoView();
}

function buildNew() {
  const list = document.getElementById("new-list");
  for (const item of DATA.new) {
    const li = el("li", { class: item.kind.replace(" ", "-") }, el("b", { text: item.kind + ": " }), item.text + " ");
    if (item.cell) {
      const a = el("a", { href: "#cell=" + encodeURIComponent(item.cell), text: "open" });
      a.addEventListener("click", (e) => { e.preventDefault(); state.cell = item.cell; update(); document.getElementById("drill").scrollIntoView(); });
      li.append(a);
    }
    list.append(li);
  }
  const findings = document.getElementById("findings-list");
  for (const f of DATA.findings) {
    const show = el("a", { href: "#issue=" + encodeURIComponent(f.id), text: "cells" });
    show.addEventListener("click", (e) => { e.preventDefault(); state.issue = f.id; state.verdict = ""; applyState(); });
    const link = /^https?:\/\//.test(f.link) ? el("a", { href: f.link, text: "link" }) : el("span", { text: f.link });
    const line = el("li", { "data-issue": f.id }, el("b", { text: f.id }), " ",
      el("span", { class: "finding-count", text: f.reproduced ? `${f.cases} cases in ${f.items} items` : `not reproduced (${f.items} items in scope)` }),
      " — ", el("span", { text: f.reason.length > 220 ? f.reason.slice(0, 220) + "…" : f.reason, title: f.reason }), " ", link, " · ", show);
    findings.append(line);
  }
}

buildControls();
buildMatrix();
buildNew();
readHash();
update();
window.addEventListener("hashchange", () => { readHash(); update(); });
document.body.dataset.loaded = "1";
