// The matrix's cells, wpt.fyi-like: each shows the share of its checked outcomes that pass, tinted from green
// (all pass) towards amber as known issues take their share, with a bar of pass, warning, known issue and failure;
// a cell holding an unexpected failure keeps its red whatever its share.  A family's cell adds up its variants'.

// a cell's bar, left to right: what passed, passed with a warning, was a known issue, failed, ran out or was cut
const SEGMENTS = [["pass", ["pass"], "#3c9a4b"], ["warning", ["warning"], "#d9b526"], ["known_issue", ["known_issue"], "#e8891a"],
  ["fail", ["fail", "error"], "#9b1111"], ["other", ["resource", "interrupted"], "#5b6fd0"]];
const GROUPED = new Intl.NumberFormat("en");  // one formatter: toLocaleString makes one a call
const plural = (n, word) => `${GROUPED.format(n)} ${word}${n === 1 ? "" : "s"}`;

// counts per verdict -> {pass, warning, known_issue, fail, other, skipped, checked}: skipped items checked nothing
function tally(counts) {
  const t = { skipped: counts.skipped || 0, checked: 0 };
  for (const [name, verdicts] of SEGMENTS) {
    t[name] = verdicts.reduce((sum, v) => sum + (counts[v] || 0), 0);
    t.checked += t[name];
  }
  return t;
}
function addCounts(into, counts) {
  for (const [k, v] of Object.entries(counts)) into[k] = (into[k] || 0) + v;
  return into;
}
// the share that passes (a warning is a lesser finding: it passes), never rounded up to 100% nor down to 0%
function shareText(t) {
  if (!t.checked) return "";
  const p = (100 * (t.pass + t.warning)) / t.checked;
  return p === 100 ? "100%" : p > 0 && p < 1 ? "<1%" : Math.floor(p) + "%";
}
// what a cell's counts say: its pass share, then what did not pass
function shareLine(t) {
  if (!t.checked) return t.skipped ? plural(t.skipped, "item") + " skipped" : "nothing checked";
  const n = (x) => GROUPED.format(x);
  const parts = [`${shareText(t)} pass (${n(t.pass + t.warning)} of ${plural(t.checked, "checked outcome")})`];
  if (t.known_issue) parts.push(`${n(t.known_issue)} of ${n(t.checked)} a known issue (documented divergence)`);
  if (t.fail) parts.push(`${n(t.fail)} fail unexpectedly`);
  if (t.other) parts.push(`${n(t.other)} out of memory or interrupted`);
  if (t.warning) parts.push(`${n(t.warning)} with a warning`);
  if (t.skipped) parts.push(plural(t.skipped, "item") + " skipped");
  return parts.join("; ");
}
// a cell's title: the verdict first where the counts alone do not say it (a new failure, nothing checked)
function cellTitle(t, verdict, extra) {
  const said = [shareLine(t), ...(extra || [])].join("; ");
  return t.checked && !NEW.includes(verdict) ? said : `${label(verdict)}: ${said}`;
}
// green where everything passes, towards amber as known issues take a larger share; a failure keeps its red
function tint(t) {
  const p = (t.pass + t.warning) / t.checked, amber = [246, 195, 107], green = [191, 230, 191];
  return "rgb(" + amber.map((a, i) => Math.round(a + (green[i] - a) * p)).join(",") + ")";
}
function bar(t) {
  const shown = SEGMENTS.filter(([name]) => t[name]).map(([name, , colour]) => [Math.max(t[name] / t.checked, 0.06), colour]);
  const whole = shown.reduce((sum, [w]) => sum + w, 0);
  let at = 0;
  const stops = shown.map(([w, colour]) => { const from = at; at += (100 * w) / whole; return `${colour} ${from.toFixed(1)}% ${at.toFixed(1)}%`; });
  return `linear-gradient(to right, ${stops.join(", ")})`;  // drawn 4px high at the foot (dashboard.css)
}
function paint(td, counts, verdict, extra) {
  const t = tally(counts);
  td.textContent = shareText(t);
  td.title = cellTitle(t, verdict, extra);
  if (!t.checked) return;
  td.style.backgroundImage = bar(t);
  if (!NEW.includes(verdict)) td.style.backgroundColor = tint(t);
}

