// millrace dashboard: polls the JSON endpoints every second and redraws
// the live parts of the page. No library, no network but this server;
// every URL is relative to <base>, so the dashboard works under any prefix.
"use strict";

const COLORS = ["#2756c5", "#d92d20", "#7a5af8", "#12b76a", "#f79009"];
const SVGNS = "http://www.w3.org/2000/svg";

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const k in attrs || {}) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  return e;
}

function human(s) {
  if (!s) return "";
  if (s < 1) return Math.round(s * 1000) + " ms";
  if (s < 60) return s.toFixed(1) + " s";
  if (s < 3600) return Math.floor(s / 60) + " min " + Math.floor(s % 60) + " s";
  return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
}

function fmt(n) {
  if (Number.isInteger(n) || n >= 100) return Math.round(n).toLocaleString("en");
  return n.toFixed(n >= 10 ? 1 : 2);
}

function showError(msg) {
  const e = document.getElementById("error");
  if (!e) return;
  e.textContent = msg || "";
  e.classList.toggle("hidden", !msg);
}

async function getJSON(url) {
  const r = await fetch(url, { headers: { "Accept": "application/json" }, cache: "no-store" });
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

// GAP_MS is the time between two samples beyond which a chart's line is
// broken: no page was watching, so no sample covers that time.
const GAP_MS = 3000;

// chart draws series [{name, values: [number], color?, width?, dash?}]
// over times [ms] as SVG polylines, in the order given (the last on top),
// scaled to the largest value, with a grid and labels. A line is broken
// before sample i when starts[i] (default: more than GAP_MS since the
// sample before); a sample alone is drawn as a dot.
function chart(svg, times, series, unit, starts) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const W = 600, H = 200, L = 44, R = 8, T = 8, B = 20;
  let max = 0;
  for (const s of series) for (const v of s.values) if (v > max) max = v;
  if (max <= 0) max = 1;
  const step = Math.pow(10, Math.floor(Math.log10(max)));
  max = Math.ceil(max / step) * step;
  const t0 = times.length ? times[0] : 0, t1 = times.length ? times[times.length - 1] : 1;
  const span = Math.max(t1 - t0, 1000);
  const x = (t) => L + (W - L - R) * (t - t0) / span;
  const y = (v) => T + (H - T - B) * (1 - v / max);
  for (let i = 0; i <= 4; i++) {
    const v = max * i / 4;
    svg.appendChild(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "axis" }));
    svg.appendChild(svgEl("text", { x: L - 4, y: y(v) + 4, "text-anchor": "end" }, fmt(v)));
  }
  svg.appendChild(svgEl("text", { x: L, y: H - 4 }, times.length ? "-" + human(span / 1000) : ""));
  svg.appendChild(svgEl("text", { x: W - R, y: H - 4, "text-anchor": "end" }, "now " + (unit || "")));
  // Runs of samples drawn as one line each: [first, end).
  const runs = [];
  for (let i = 0; i < times.length; i++) {
    const start = starts ? starts[i] : i > 0 && times[i] - times[i - 1] > GAP_MS;
    if (i === 0 || start) runs.push([i, i + 1]); else runs[runs.length - 1][1] = i + 1;
  }
  series.forEach((s, i) => {
    const color = s.color || COLORS[i % COLORS.length];
    for (const [a, b] of runs) {
      const pts = [];
      for (let j = a; j < b; j++) pts.push(x(times[j]).toFixed(1) + "," + y(s.values[j]).toFixed(1));
      if (pts.length === 1) pts.push(pts[0]); // a dot: a line of no length, with round caps
      const attrs = { points: pts.join(" "), fill: "none", stroke: color, "stroke-width": s.width || 1.6, "stroke-linecap": "round",
        "stroke-linejoin": "round", "vector-effect": "non-scaling-stroke", "data-series": s.name };
      if (b - a === 1) attrs["stroke-width"] = Math.max(4, (s.width || 1.6) + 2);
      if (s.dash) attrs["stroke-dasharray"] = s.dash;
      svg.appendChild(svgEl("polyline", attrs));
    }
  });
  svg.setAttribute("data-points", String(times.length));
  svg.setAttribute("data-lines", String(runs.length));
  svg.setAttribute("data-last", times.length ? String(times[times.length - 1]) : "");
}

// legend shows entries [{name, cls, text?}]: a swatch of class cls (the
// colour, and how the line is drawn) and the name, then text if any.
function legend(id, entries) {
  const box = document.getElementById(id);
  if (!box) return;
  const sig = entries.map((e) => e.name + "|" + e.cls).join(",");
  if (box.getAttribute("data-sig") !== sig) {
    box.textContent = "";
    box.setAttribute("data-sig", sig);
    for (const e of entries) {
      const s = el("span", { "data-series": e.name });
      s.appendChild(el("i", { class: e.cls }));
      s.appendChild(document.createTextNode(e.name));
      s.appendChild(el("b"));
      box.appendChild(s);
    }
  }
  entries.forEach((e, i) => {
    const b = box.children[i].querySelector("b");
    const t = e.text ? " " + e.text : "";
    if (b.textContent !== t) b.textContent = t;
  });
}

// queueRow builds a queue's row. Its cells with data-col are refreshed in
// place (fillRow) every second; the row is rebuilt only when its buttons
// change (paused, or the role's rights), so a button is never replaced
// under the pointer.
function queueRow(q, can) {
  const tr = el("tr", { "data-queue": q.name, "data-sig": rowSig(q, can) });
  const a = el("a", { href: "jobs?queue=" + encodeURIComponent(q.name) }, q.name);
  const name = el("td"); name.appendChild(a); tr.appendChild(name);
  for (const k of ["available", "running", "scheduled", "discarded", "completed", "cancelled", "oldest", "rate"]) tr.appendChild(el("td", { class: "num", "data-col": k }));
  const st = el("td"); st.appendChild(el("span", { class: "state " + (q.paused ? "s-paused" : "s-active"), "data-col": "paused" }, q.paused ? "paused" : "active")); tr.appendChild(st);
  tr.appendChild(el("td", { class: "num", "data-col": "limit", title: "held / limit: jobs the live processes hold (claimed, not yet ended) over the queue's concurrency limit across every process; started / rate in the current window; per key: keys with a job running, keys at the limit, jobs waiting in the schedule for their key; the per-key rate" }));
  if (can.limit) {
    const td = el("td");
    const f = el("form", { method: "post", action: "queue/limit", class: "limit" });
    f.appendChild(el("input", { type: "hidden", name: "queue", value: q.name }));
    f.appendChild(el("input", { type: "number", name: "running", min: "1", max: "1000000", placeholder: "running", title: "at most this many running at once (empty: none)", "aria-label": "running limit of " + q.name, value: q.limit > 0 ? String(q.limit) : "" }));
    f.appendChild(el("input", { type: "text", name: "rate", placeholder: "rate N/1s", title: "at most N starting per period, as N/PERIOD: 100/1s, 60/1m (empty: none)", "aria-label": "rate limit of " + q.name, value: rateText(q) }));
    f.appendChild(el("input", { type: "number", name: "per_key", min: "1", max: "1000000", placeholder: "per key", title: "at most this many of one key running at once (empty: none)", "aria-label": "per-key limit of " + q.name, value: q.per_key > 0 ? String(q.per_key) : "" }));
    f.appendChild(el("input", { type: "text", name: "key_rate", placeholder: "per key N/1s", title: "at most N of one key starting per period, as N/PERIOD: 100/1s, 60/1m (empty: none)", "aria-label": "per-key rate of " + q.name, value: periodText(q.key_rate, q.key_rate_period_s) }));
    f.appendChild(el("input", { type: "text", name: "key", placeholder: "key: kind", title: "the key of a job for the per-key limit and rate: kind, or top-level args fields, comma-separated (customer_id)", "aria-label": "key of " + q.name, value: keyText(q) }));
    f.appendChild(el("button", { class: "small", "data-action": "limit", "data-queue": q.name }, "Set limit"));
    td.appendChild(f);
    tr.appendChild(td);
  }
  if (can.pause || can.resume) {
    const td = el("td");
    const act = q.paused ? "resume" : "pause";
    if ((act === "pause" && can.pause) || (act === "resume" && can.resume)) {
      const f = el("form", { method: "post", action: "queue/" + act });
      if (act === "pause") f.setAttribute("data-confirm", "Pause queue " + q.name + "? Its jobs wait until it is resumed.");
      f.appendChild(el("input", { type: "hidden", name: "queue", value: q.name }));
      f.appendChild(el("button", { class: "small" + (act === "pause" ? " danger" : ""), "data-action": act, "data-queue": q.name }, act === "pause" ? "Pause" : "Resume"));
      td.appendChild(f);
    }
    tr.appendChild(td);
  }
  fillRow(tr, q);
  return tr;
}

function rowSig(q, can) {
  return [q.paused, can.pause, can.resume, can.limit, q.limit, rateText(q), q.per_key, periodText(q.key_rate, q.key_rate_period_s), keyText(q)].join(",");
}

// rateText is a queue's rate limit as N/PERIOD ("": none).
function rateText(q) {
  return periodText(q.rate_limit, q.rate_period_s);
}

// periodText is n per s seconds as N/PERIOD ("": none).
function periodText(n, s) {
  if (!(n > 0)) return "";
  const per = s % 3600 === 0 ? s / 3600 + "h" : s % 60 === 0 ? s / 60 + "m" : s >= 1 ? s + "s" : Math.round(s * 1000) + "ms";
  return n + "/" + per;
}

// keyText is a per-key limit's key as the form takes it ("": none).
function keyText(q) {
  if (!(q.per_key > 0 || q.key_rate > 0) || !q.key) return "";
  return q.key.map((p) => p.startsWith("args.") ? p.slice(5) : p).join(",");
}

// limitText is a queue's limits as the page shows them: held / running
// limit, started / rate per period, and the per-key limit's keys.
function limitText(q) {
  const parts = [];
  if (q.limit > 0) parts.push(fmt(q.held) + " / " + fmt(q.limit));
  if (q.rate_limit > 0) parts.push(fmt(q.started) + " / " + rateText(q));
  if (q.per_key > 0) parts.push(fmt(q.per_key) + " per " + keyText(q) + ": " + fmt(q.keys_running) + " keys, " + fmt(q.keys_full) + " full, " + fmt(q.deferred) + " deferred");
  if (q.key_rate > 0) parts.push(periodText(q.key_rate, q.key_rate_period_s) + " per " + (keyText(q) || "kind") + (q.per_key > 0 ? "" : ": " + fmt(q.deferred) + " deferred"));
  return parts.length ? parts.join(", ") : "–";
}

function fillRow(tr, q) {
  const v = { available: fmt(q.available), running: fmt(q.running), scheduled: fmt(q.scheduled), discarded: fmt(q.discarded),
    completed: fmt(q.completed), cancelled: fmt(q.cancelled), oldest: human(q.oldest_waiting_s), rate: fmt(q.rate_per_s),
    limit: limitText(q) };
  for (const k in v) {
    const td = tr.querySelector('td[data-col="' + k + '"]');
    if (td.textContent !== v[k]) td.textContent = v[k];
  }
}

function fillQueues(tbody, queues, can) {
  const rows = new Map();
  for (const tr of tbody.querySelectorAll("tr[data-queue]")) rows.set(tr.getAttribute("data-queue"), tr);
  const empty = tbody.querySelector("tr:not([data-queue])");
  if (empty && queues.length > 0) empty.remove();
  let prev = null;
  for (const q of queues) {
    let tr = rows.get(q.name);
    rows.delete(q.name);
    if (tr && tr.getAttribute("data-sig") === rowSig(q, can)) {
      fillRow(tr, q);
    } else {
      const fresh = queueRow(q, can);
      if (tr) tr.replaceWith(fresh); else tbody.insertBefore(fresh, prev ? prev.nextSibling : tbody.firstChild);
      tr = fresh;
    }
    prev = tr;
  }
  for (const tr of rows.values()) tr.remove();
  if (queues.length === 0) {
    const msg = "No queue has a job yet.";
    if (empty) empty.firstChild.textContent = msg;
    else tbody.appendChild(el("tr")).appendChild(el("td", { colspan: 11, class: "empty" }, msg));
  }
}

// setupShown is the line the page shows about what the database lacks
// ("": none).
function setupShown() {
  const s = document.getElementById("setup");
  return s ? s.textContent : "";
}

// placeholder replaces the "loading…" row of a table that has no data row
// yet.
function placeholder(tbody, msg) {
  const td = tbody.querySelector("tr:not([data-queue]) td.empty");
  if (td && !tbody.querySelector("tr[data-queue]") && td.textContent !== msg) td.textContent = msg;
}

async function refreshQueues() {
  const tbody = document.querySelector("#queues tbody");
  const setup = setupShown();
  let d;
  try {
    d = await getJSON("api/overview" + (setup ? "?setup=1" : ""));
  } catch (e) {
    if (e.message === setup) {
      // The page says it already, once.
      showError("");
      placeholder(tbody, "No queue to show.");
    } else {
      showError("Cannot read the queues: " + e.message);
      placeholder(tbody, "Cannot read the queues.");
    }
    return;
  }
  if (setup && (d.setup || "") !== setup) {
    location.reload(); // the schema was migrated meanwhile
    return;
  }
  showError("");
  fillQueues(tbody, d.queues, d.can);
  const times = d.samples.map((s) => Date.parse(s.at));
  // A line starts again after time no sample covers, and at a sample that
  // covers more than GAP_MS (drawn alone: its values are of that window).
  const long = (s) => Date.parse(s.at) - Date.parse(s.since) > GAP_MS;
  const starts = d.samples.map((s, i) => i > 0 && (times[i] - times[i - 1] > GAP_MS || long(s) || long(d.samples[i - 1])));
  const rate = (s, n) => { const dt = (Date.parse(s.at) - Date.parse(s.since)) / 1000; return dt > 0 ? n / dt : 0; };
  // Drawn in this order, the last on top. Failed and discarded often move
  // together (a job's last failure is a discard): failed is drawn wider,
  // discarded dashed over it, so that either shows where they are equal.
  const tp = [
    { key: "completed", cls: "c0", color: COLORS[0] },
    { key: "cancelled", cls: "c3", color: COLORS[3] },
    { key: "snoozed", cls: "c4", color: COLORS[4] },
    { key: "failed", cls: "c1 wide", color: COLORS[1], width: 3 },
    { key: "discarded", cls: "c2 dashed", color: COLORS[2], dash: "5 4" },
  ];
  chart(document.getElementById("chart-throughput"), times, tp.map((x) => ({
    name: x.key + "/s", color: x.color, width: x.width, dash: x.dash, values: d.samples.map((s) => rate(s, s[x.key])),
  })), "jobs/s", starts);
  const total = (k) => d.samples.reduce((n, s) => n + s[k], 0);
  legend("legend-throughput", ["completed", "failed", "discarded", "cancelled", "snoozed"].map((k) => {
    const x = tp.find((e) => e.key === k);
    return { name: k, cls: x.cls, text: "(" + fmt(total(k)) + ")" };
  }));
  chart(document.getElementById("chart-latency"), times, [
    { name: "wait p50", values: d.samples.map((s) => s.wait_p50_ms) },
    { name: "wait p95", values: d.samples.map((s) => s.wait_p95_ms) },
    { name: "run p50", values: d.samples.map((s) => s.run_p50_ms) },
    { name: "run p95", values: d.samples.map((s) => s.run_p95_ms) },
  ], "ms", starts);
  legend("legend-latency", ["wait p50", "wait p95", "run p50", "run p95"].map((n, i) => ({ name: n, cls: "c" + i })));
}

async function refreshHorizon() {
  let d;
  try {
    d = await getJSON("api/horizon");
  } catch (e) {
    showError("Cannot read the horizon: " + e.message);
    return;
  }
  showError((d.errors || []).join("; "));
  const tbody = document.querySelector("#holders tbody");
  tbody.textContent = "";
  document.getElementById("holders-count").textContent = "(" + d.holders.length + ")";
  if (d.holders.length === 0) {
    tbody.appendChild(el("tr")).appendChild(el("td", { colspan: 8, class: "empty" }, "Nothing holds the horizon back: VACUUM can remove every dead row version."));
  }
  for (const h of d.holders) {
    const tr = el("tr", { "data-source": h.source, "data-pid": String(h.pid) });
    tr.appendChild(el("td", {}, h.source + (h.node ? " (" + h.node + ")" : "")));
    tr.appendChild(el("td", { class: "num" }, h.pid ? String(h.pid) : ""));
    tr.appendChild(el("td", { class: "num", "data-col": "age" }, human(h.age_s) || "unknown"));
    tr.appendChild(el("td", { class: "num" }, fmt(h.xmin_age_xids)));
    tr.appendChild(el("td", {}, h.class || (d.policy ? "" : "no policy")));
    const who = [h.application_name && "app=" + h.application_name, h.user && "user=" + h.user, h.database && "db=" + h.database].filter(Boolean).join(" ");
    tr.appendChild(el("td", {}, who || h.describe));
    tr.appendChild(el("td", {}, h.state ? h.state + (h.idle_s ? " for " + human(h.idle_s) : "") : ""));
    tr.appendChild(el("td", { class: "query", title: h.query || "" }, h.query || ""));
    tbody.appendChild(tr);
  }
  document.getElementById("waiting").textContent = d.sessions_in_transaction_not_holding
    ? d.sessions_in_transaction_not_holding + " other session(s) in a transaction hold no xmin yet (read committed, between statements)."
    : "";
  const tb = document.querySelector("#tables tbody");
  tb.textContent = "";
  for (const t of d.tables) {
    const tr = el("tr");
    tr.appendChild(el("td", { "data-table": t.name }, t.name + (t.partitions ? " (" + t.partitions + " partitions)" : "")));
    tr.appendChild(el("td", { class: "num" }, fmt(t.dead_tuples)));
    tr.appendChild(el("td", { class: "num" }, fmt(t.live_tuples)));
    tb.appendChild(tr);
  }
  if (d.tables.length === 0) tb.appendChild(el("tr")).appendChild(el("td", { colspan: 3, class: "empty" }, "No user table in this database."));
  const ab = document.querySelector("#actions tbody");
  if (ab) {
    ab.textContent = "";
    for (const a of d.actions) {
      const tr = el("tr");
      tr.appendChild(el("td", {}, a.seen));
      tr.appendChild(el("td", {}, a.class));
      tr.appendChild(el("td", {}, a.source + (a.pid ? " pid " + a.pid : "") + (a.target ? " " + a.target : "")));
      tr.appendChild(el("td", {}, a.rule));
      tr.appendChild(el("td", {}, a.action));
      tr.appendChild(el("td", {}, a.reason));
      ab.appendChild(tr);
    }
    if (d.actions.length === 0) ab.appendChild(el("tr")).appendChild(el("td", { colspan: 6, class: "empty" }, "Nothing yet: every holder is within the policy."));
  }
}

function poll(fn) {
  let busy = false;
  const tick = async () => {
    if (busy || document.hidden) return;
    busy = true;
    try { await fn(); } finally { busy = false; }
  };
  tick();
  setInterval(tick, 1000);
}

document.addEventListener("submit", (ev) => {
  const msg = ev.target.getAttribute("data-confirm");
  if (msg && !window.confirm(msg)) ev.preventDefault();
});

document.addEventListener("DOMContentLoaded", () => {
  const page = document.body.dataset.page;
  if (page === "queues") poll(refreshQueues);
  if (page === "horizon") poll(refreshHorizon);
});
