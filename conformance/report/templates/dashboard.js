// The dashboard: draws the matrix from the embedded data (cells.js paints each cell's pass share), filters it,
// and opens a cell's checks and worst cases on demand (drill.js).  Every string from the run is set as text, never
// as HTML.  The view lives in the URL's hash, so a link reopens the same filters and cell.  The page's script is
// cells.js, drill.js and this file in one <script> element, this one last (it draws the page).
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
// family -> {tr: its row, rows: its variants' data, built: whether their rows are drawn}: a family's variant rows
// are drawn the first time one is shown (opened, found by a filter, or a linked cell's), so the first screen
// draws the family rows only, whatever the run's size
const families = new Map();
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
  for (const row of DATA.matrix.rows) {
    rowsById[row.id] = row;
    if (!families.has(row.family)) families.set(row.family, { rows: [], built: false });
    families.get(row.family).rows.push(row);
  }
  for (const [family, f] of families) {
    const failing = f.rows.some((r) => NEW.includes(r.verdict));  // a family with new failures opens by itself
    f.tr = el("tr", { class: failing ? "family open" : "family", "data-family": family });
    f.name = (family || "(no family)") + " (" + f.rows.length + ")";
    f.tr.append(el("td", { class: "name", colspan: "3", text: "▸ " + f.name }));
    for (const c of DATA.matrix.columns) {
      const cells = f.rows.map((r) => r.cells[c.id]).filter(Boolean);
      const v = cells.length ? worst(cells.map((x) => x.verdict)) : "absent";
      const td = el("td", { class: "cell v-" + v, "data-column": c.id, "data-verdict": v });
      const known = cells.filter((x) => x.verdict === "known_issue").length, failing = cells.filter((x) => NEW.includes(x.verdict)).length;
      const extra = [`${plural(cells.length, "variant")}` + (failing ? `, ${failing} failing` : "") + (known ? `, ${known} with a known issue` : "")];
      if (cells.length) paint(td, cells.reduce((sum, x) => addCounts(sum, x.counts), {}), v, extra);
      f.tr.append(td);
    }
    f.tr.firstChild.addEventListener("click", () => { f.tr.classList.toggle("open"); update(); });
    body.append(f.tr);
  }
  table.append(body);
}
function buildRows(family, f) {
  if (f.built) return;
  f.built = true;
  f.tr.after(...f.rows.map((row) => {
    const vr = el("tr", { class: "variant", "data-row": row.id, "data-family": family, "data-verdict": row.verdict });
    vr.append(el("td", { class: "name", text: row.op }), el("td", { text: row.library }), el("td", { text: row.dtype + ", " + row.mode }));
    for (const c of DATA.matrix.columns) {
      const cell = row.cells[c.id];
      if (!cell) { vr.append(el("td", { class: "cell v-absent", "data-column": c.id })); continue; }
      const td = el("td", { class: "cell v-" + cell.verdict, "data-column": c.id, "data-cell": row.id + "." + c.id, "data-verdict": cell.verdict });
      paint(td, cell.counts, cell.verdict);
      td.addEventListener("click", () => { state.cell = row.id + "." + c.id; update(); });
      vr.append(td);
    }
    row.tr = vr;
    return vr;
  }));
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
  const cellMatches = (row, id) => row.cells[id] && visibleColumns.has(id) && verdictMatches(row.cells[id].verdict) && (!onlyCells || onlyCells.has(row.id + "." + id));
  let shown = 0;
  for (const [family, f] of families) {
    const open = f.tr.classList.contains("open");
    const matched = new Set(f.rows.filter((row) => {
      let match = (!state.library || row.library === state.library) && (!state.dtype || row.dtype === state.dtype);
      if (match && query) match = [row.family, row.op, row.library, row.mode].join(" ").toLowerCase().includes(query);
      return match && Object.keys(row.cells).some((id) => cellMatches(row, id));
    }));
    const wanted = (row) => matched.has(row) && (filtering || open || state.cell.startsWith(row.id + "."));
    if (f.rows.some(wanted)) buildRows(family, f);
    for (const row of f.built ? f.rows : []) {
      row.tr.hidden = !wanted(row);
      if (!row.tr.hidden) shown += 1;
      for (const td of row.tr.querySelectorAll("td.cell[data-cell]")) {
        td.classList.toggle("dim", !cellMatches(row, td.dataset.column));
        td.classList.toggle("selected", td.dataset.cell === state.cell);
      }
    }
    f.tr.hidden = filtering && matched.size === 0;
    f.tr.firstChild.textContent = (open || filtering ? "▾ " : "▸ ") + f.name;
  }
  for (const node of document.querySelectorAll("#matrix [data-column]")) node.hidden = !visibleColumns.has(node.dataset.column);
  document.getElementById("matrix-empty").hidden = !(filtering && shown === 0);
  drill();
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
}

// below the matrix and hundreds of lines long: drawn once the first screen is painted
function buildFindings() {
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
document.body.dataset.loaded = performance.now().toFixed(0);  // truthy: ms from navigation start
requestAnimationFrame(() => setTimeout(buildFindings));
