// A cell opened: its checks and worst cases (pictures included) are in its family's script file beside the page
// (index_files/<file>.js, which calls conformanceDetails), loaded when a cell of the family is first opened: the
// first screen stays light whatever the run's size, and a <script> element works from file://, where fetch() does
// not.  Every string is set as text.

const PARTS = {};  // file -> what its family's cells open to, once it has run; {failed: true} where it could not
window.conformanceDetails = (file, part) => {
  PARTS[file] = part;
  if (state.cell && fileOf(state.cell) === file) drill();
};
function fileOf(cellId) {
  const row = rowsById[cellId.split(".")[0]];
  return row ? DATA.files[row.family] : undefined;
}
function loadPart(file) {
  if (document.querySelector(`script[data-part="${file}"]`)) return;
  const script = el("script", { "data-part": file });
  script.addEventListener("error", () => { PARTS[file] = { failed: true }; if (state.cell && fileOf(state.cell) === file) drill(); });
  script.src = DATA.folder + "/" + file;
  document.head.append(script);
}

function drill() {
  const panel = document.getElementById("drill");
  panel.replaceChildren();
  delete panel.dataset.ready;
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
  panel.append(el("p", { class: "share", text: shareLine(tally(cell.counts)) }));
  const file = DATA.files[row.family], part = PARTS[file];
  if (!document.body.dataset.loaded) panel.scrollIntoView();
  if (!part) { panel.append(el("p", { text: "Loading its checks and worst cases…" })); loadPart(file); return; }
  if (part.failed) {
    panel.append(el("p", { class: "damaged", text: `Its checks and worst cases are in ${DATA.folder}/${file} beside this page, which could not be read: keep the ${DATA.folder} folder with index.html.` }));
    return;
  }
  drawChecks(panel, part.checks[state.cell] || []);
  const cases = part.details.filter((d) => d.cell === state.cell);
  if (!cases.length) panel.append(el("p", { text: "No failing or known-issue case of this cell was kept." }));
  for (const d of cases) panel.append(caseBox(d));
  panel.dataset.ready = "1";
}

// the columns and what each says of a check come from the run (report/check_columns.py): this draws text only
function drawChecks(panel, checks) {
  const table = el("table", { id: "drill-checks" }, el("tr", {}, ...DATA.check_columns.map((t) => el("th", { text: t }))));
  for (const c of checks) table.append(el("tr", { class: "v-" + c.verdict }, ...c.cells.map((t) => el("td", { text: t }))));
  panel.append(table);
}

function caseBox(d) {
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
  return box;
}

function picture(p, text) {
  return el("figure", {}, el("img", { src: p.src, width: p.width, height: p.height, alt: text }), el("figcaption", { text }));
}

