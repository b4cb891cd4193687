// llmload charts page: polls data.json every second and draws hand-made SVG charts (no library).
// Every chart is an <svg id="chart-..."> whose series are <path class="series" data-name data-n data-drawn>
// (data-n points, data-drawn of them with a value), tier bands <rect class="band" data-tier>, the SLO line
// <line class="slo-line"> and its <text class="slo-label">, the knee <g class="knee-marker">; the browser
// tests read those.
"use strict";
const NS = "http://www.w3.org/2000/svg";
const MAX_POINTS = 7200;
const COLORS = {p50: "#2e7d32", p95: "#ff9f00", p99: "#8e24aa", rps: "#0099ff", fail: "#e53935", tokens: "#00897b",
  users: "#3949ab", "429": "#ff9f00", http_5xx: "#e53935", http_4xx: "#8d6e63", timeout: "#6d4c41",
  connect: "#546e7a", stream_broken: "#d81b60", protocol: "#5e35b1", stream_error: "#c0ca33", other: "#757575"};
const M = {l: 48, r: 48, t: 22, b: 24};
let points = [], generation = null, last = null;

function el(name, attrs, parent) {
  const e = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}
function text(parent, x, y, s, anchor) {
  const t = el("text", {x, y, "text-anchor": anchor || "start"}, parent); t.textContent = s; return t;
}
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v))), f = v / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}
function frame(svg, xmin, xmax, ymax, xfmt, ylabel, xticks) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  const W = svg.clientWidth || 560, H = svg.clientHeight || 240;
  const sx = v => M.l + (xmax > xmin ? (v - xmin) / (xmax - xmin) : 0) * (W - M.l - M.r);
  const sy = v => H - M.b - (v / ymax) * (H - M.t - M.b);
  for (let i = 0; i <= 4; i++) {
    const v = ymax * i / 4, y = sy(v);
    el("line", {x1: M.l, x2: W - M.r, y1: y, y2: y, class: "gridline"}, svg);
    text(svg, M.l - 4, y + 4, fmt(v), "end");
  }
  el("line", {x1: M.l, x2: M.l, y1: M.t, y2: H - M.b, class: "axis"}, svg);
  el("line", {x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b, class: "axis"}, svg);
  for (const v of xticks || [0, 1, 2, 3, 4].map(i => xmin + (xmax - xmin) * i / 4)) {
    text(svg, sx(v), H - 6, xfmt(v), "middle");
  }
  if (ylabel) text(svg, 4, 12, ylabel);
  return {sx, sy, W, H};
}
function fmt(v) { return v >= 1000 ? (v / 1000).toFixed(v >= 10000 ? 0 : 1) + "k" : (+v.toFixed(1)).toString(); }
function path(svg, xy, sx, sy, name, color) {
  const drawn = xy.filter(p => p[1] !== null && p[1] !== undefined);
  const d = drawn.map((p, i) => (i ? "L" : "M") + sx(p[0]).toFixed(1) + "," + sy(p[1]).toFixed(1)).join("");
  return el("path", {d: d || "M0,0", class: "series", "data-name": name, "data-n": String(xy.length),
    "data-drawn": String(drawn.length), stroke: color}, svg);
}
function legend(id, names) {
  document.getElementById(id).innerHTML = names.map(n =>
    `<span><i style="background:${COLORS[n] || "#999"}"></i>${n}</span>`).join("");
}

// opts.hline: a bound drawn across (labelled opts.hlabel); the scale stretches to show it, unless opts.hfit is
// set and the bound is over hfit times the highest value (then it is not drawn: the chart returns "off scale").
function timeChart(id, series, opts) {
  const svg = document.getElementById(id);
  if (!points.length) { frame(svg, 0, 1, 1, () => "", opts.ylabel); return ""; }
  const t0 = points[0].t, tEnd = Math.max(points[points.length - 1].t, t0 + 10);
  let ymax = 0;
  for (const s of series) for (const p of points) ymax = Math.max(ymax, p[s.key] || 0);
  const hline = opts.hline && opts.hfit && ymax > 0 && opts.hline > opts.hfit * ymax ? null : opts.hline;
  if (hline) ymax = Math.max(ymax, hline * 1.1);
  const f = frame(svg, 0, tEnd - t0, niceMax(ymax * 1.05), v => Math.round(v) + "s", opts.ylabel);
  (opts.tiers || []).forEach((tier, i) => {
    const a = Math.max(tier.start_s, t0), b = Math.min(tier.end_s || tEnd, tEnd);
    if (b <= a) return;
    el("rect", {x: f.sx(a - t0), y: M.t, width: Math.max(1, f.sx(b - t0) - f.sx(a - t0)), height: f.H - M.t - M.b,
      class: "band" + (tier.confirm ? " confirm " + tier.slo : i % 2 ? " odd" : ""), "data-tier": tier.tier}, svg);
    text(svg, f.sx(a - t0) + 3, M.t + 20, (tier.confirm ? "confirm " + tier.slo + " " : "T" + tier.tier + " ") +
      tier.target.replace(" (confirm)", ""));
  });
  if (hline) {
    const y = f.sy(hline);
    el("line", {x1: M.l, x2: f.W - M.r, y1: y, y2: y, class: "slo-line"}, svg);
    text(svg, f.W - M.r, y - 4, opts.hlabel || "SLO " + hline + " ms", "end").setAttribute("class", "slo-label");
  }
  for (const s of series) path(svg, points.map(p => [p.t - t0, p[s.key]]), f.sx, f.sy, s.name, COLORS[s.name]);
  return opts.hline && !hline ? "off scale" : "";
}

function itlChart(data) {  // ITL mean per request, with the TPOT p95 bound of the SLO profile's objective
  const bound = data.slo_tpot_p95_ms, label = bound ? `TPOT p95 bound ${bound} ms (${data.slo_profile} objective)` : "";
  const off = timeChart("chart-itl", [{key: "itl_mean_p50", name: "p50"}, {key: "itl_mean_p95", name: "p95"},
    {key: "itl_mean_p99", name: "p99"}], {tiers: data.tiers, hline: bound, hlabel: label, hfit: 10, ylabel: "ms"});
  legend("legend-itl", ["p50", "p95", "p99"]);
  const note = document.createElement("span");
  note.id = "itl-bound";
  note.textContent = !bound ? "no TPOT bound in this SLO profile" :
    off ? `${label}: off the scale (over 10x the highest ITL), not drawn` : label;
  document.getElementById("legend-itl").appendChild(note);
}

function kneeChart(data) {
  const svg = document.getElementById("chart-knee");
  const tiers = data.tiers.filter(t => t.done && t.requests > 0 && t.load && !t.confirm);  // windows: req/s
  const xmax = Math.max(1, ...tiers.map(t => t.load));
  const p99max = niceMax(Math.max(1, ...tiers.map(t => t.ttft_p99 || 0)) * 1.1);
  const rpsmax = niceMax(Math.max(1, ...tiers.map(t => t.rps || 0)) * 1.1);
  const f = frame(svg, 0, xmax * 1.05, p99max, v => fmt(v), "p99 TTFT ms", tiers.map(t => t.load));
  const sr = v => f.H - M.b - (v / rpsmax) * (f.H - M.t - M.b);
  for (let i = 0; i <= 4; i++) text(svg, f.W - M.r + 4, sr(rpsmax * i / 4) + 4, fmt(rpsmax * i / 4));
  text(svg, f.W - 4, 12, "req/s", "end");
  path(svg, tiers.map(t => [t.load, t.ttft_p99]), f.sx, f.sy, "p99", COLORS.p99);
  path(svg, tiers.map(t => [t.load, t.rps]), f.sx, sr, "rps", COLORS.rps);
  for (const t of tiers) {
    el("circle", {cx: f.sx(t.load), cy: f.sy(t.ttft_p99 || 0), r: 4, fill: COLORS.p99, class: "knee-point"}, svg);
    el("circle", {cx: f.sx(t.load), cy: sr(t.rps || 0), r: 4, fill: COLORS.rps}, svg);
  }
  const knee = data.tiers.find(t => t.tier === data.knee.tier);
  if (data.knee.kind === "knee" && knee) {
    const g = el("g", {class: "knee-marker", "data-tier": knee.tier}, svg), x = f.sx(knee.load);
    el("line", {x1: x, x2: x, y1: M.t, y2: f.H - M.b}, g);
    text(g, x + 4, M.t + 12, "queueing onset: " + knee.target);
  }
}

function errorChart(data) {
  const svg = document.getElementById("chart-errors");
  const tiers = data.tiers, kinds = [...new Set(tiers.flatMap(t => Object.keys(t.errors)))].sort();
  const ymax = 4 * Math.ceil(Math.max(4, ...tiers.map(t => Object.values(t.errors).reduce((a, b) => a + b, 0))) / 4);
  const f = frame(svg, 0, Math.max(1, tiers.length), ymax, () => "", "failures", []);
  const bw = (f.W - M.l - M.r) / Math.max(1, tiers.length);
  tiers.forEach((t, i) => {
    let y = 0;
    text(svg, M.l + bw * (i + 0.5), f.H - 6, "T" + t.tier, "middle");
    for (const k of kinds) {
      const n = t.errors[k] || 0; if (!n) continue;
      el("rect", {x: M.l + bw * i + bw * 0.2, width: bw * 0.6, y: f.sy(y + n), height: f.sy(y) - f.sy(y + n),
        fill: COLORS[k] || "#999", class: "error-bar", "data-kind": k, "data-tier": t.tier, "data-n": n}, svg);
      y += n;
    }
  });
  legend("legend-errors", kinds.length ? kinds : ["no failures yet"]);
}

function verdicts(data) {
  const set = (id, html) => { document.getElementById(id).innerHTML = html; };
  const esc = s => String(s ?? "").replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})[c]);
  document.getElementById("state").textContent = "(" + data.state + ")";
  const banner = document.getElementById("banner"), warnings = data.warnings || [];
  banner.innerHTML = warnings.map(w => `&#9888; ${esc(w)}`).join("<br>");
  banner.hidden = !warnings.length;
  set("run-dir", (data.run_dir ? `writes to <code>${esc(data.run_dir)}</code>` : "no run yet") +
    (data.warmup ? ` (${esc(data.warmup)})` : ""));
  const note = document.getElementById("files-note");  // --ship histograms: no samples.csv
  note.textContent = data.note || "";
  note.hidden = !data.note;
  document.getElementById("link-samples").hidden = !!data.note;
  document.getElementById("link-histograms").hidden = !data.note;
  set("knee-verdict", `<span class="${data.knee.kind === "knee" ? "warn" : ""}">${esc(data.knee.text)}</span>`);
  set("compute-verdict", esc(data.compute.text));
  set("saturation-verdict", esc(data.saturation.text));
  set("capacity-verdict", esc(data.capacity.text));
  set("plan-verdict", esc(data.plan.text));
  set("slo-profile", esc(data.slo_text));
  const health = data.health.map(h => `${esc(h.worker)}: loop lag ${h.loop_lag_ms ?? "-"} ms, CPU ${h.cpu_percent ?? "-"}%` +
    (h.warning ? ` <span class="warn">last 10 s: ${esc(h.warning)}</span>` : ""));
  health.push(`UI process: loop lag ${data.ui_loop_lag_ms} ms`);
  set("health", health.join("<br>"));
  document.querySelector("#slo-table tbody").innerHTML = data.tiers.map(t => `<tr data-tier="${t.tier}">` +
    `<td>${t.tier}</td><td>${esc(t.target)}</td><td>${esc(t.phase)}</td><td>${t.requests}</td><td>${t.ttft_p95 ?? "-"}</td>` +
    `<td>${t.rps ?? "-"}</td><td class="slo ${t.slo}">${esc(t.slo_text)}</td>` +
    `<td class="gen">${t.health ? `<span class="warn">UNTRUSTWORTHY: ${esc(t.health)}</span>` : "ok"}</td></tr>`).join("");
}

function draw(data) {
  const tiers = data.tiers;
  timeChart("chart-ttft", [{key: "ttft_p50", name: "p50"}, {key: "ttft_p95", name: "p95"}, {key: "ttft_p99", name: "p99"}],
    {tiers, hline: data.slo_ttft_p95_ms, ylabel: "ms"});
  legend("legend-ttft", ["p50", "p95", "p99"]);
  itlChart(data);
  timeChart("chart-rps", [{key: "rps", name: "rps"}, {key: "fail_ps", name: "fail"}], {tiers, ylabel: "req/s"});
  timeChart("chart-tokens", [{key: "out_tps", name: "tokens"}], {tiers, ylabel: "tok/s"});
  timeChart("chart-users", [{key: "users", name: "users"}], {tiers, ylabel: "users"});
  kneeChart(data);
  legend("legend-knee", ["p99", "rps"]);
  errorChart(data);
  verdicts(data);
}

async function poll() {
  try {
    const since = generation === null || !points.length ? 0 : points[points.length - 1].t;
    const resp = await fetch("data.json?since=" + since, {credentials: "same-origin"});
    if (resp.ok) {
      const data = await resp.json();
      if (data.generation !== generation) { points = []; generation = data.generation; }
      points = points.concat(data.points).slice(-MAX_POINTS);
      last = data;
      draw(data);
    }
  } catch (e) { console.error(e); }
  setTimeout(poll, 1000);
}
window.addEventListener("resize", () => last && draw(last));
poll();
