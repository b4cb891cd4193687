// Added to Locust's page by llmload: a bar with the run folder, the verdicts so far and links to
// the LLM charts, the run's CSVs (those it wrote: histograms.csv instead of samples.csv with --ship histograms)
// and the report so far, and a red banner with the live warnings (a generator overloaded, the SDK's ceiling)
// while there are any. Polls data.json (without the series). The start form opens on the locustfile's shape.
// z-index 1200: above Locust's app bar (MUI 1100), below its dialogs (MUI modal 1300), so the
// "New" / "Edit" forms are never covered.
"use strict";
(function () {
  const base = document.currentScript.src.replace(/static\/inject\.js.*$/, "");
  const bar = document.createElement("div");
  bar.id = "llmload-bar";
  bar.style.cssText = "position:fixed;left:0;right:0;bottom:0;z-index:1200;padding:5px 12px;font:13px system-ui," +
    "sans-serif;background:#1d2430;color:#e8ecf3;display:flex;gap:16px;flex-wrap:wrap;align-items:center";
  const link = (href, label, id) => `<a id="${id}" href="${base}${href}" target="_blank" rel="noopener" ` +
    `style="color:#8ab4ff">${label}</a>`;
  const esc = s => String(s ?? "").replace(/[&<>"]/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"})[c]);
  bar.innerHTML = "<b>LLM</b>" + link("charts", "Charts &#8599;", "llmload-charts") +
    link("files/samples.csv", "samples.csv", "llmload-samples") +
    link("files/histograms.csv", "histograms.csv", "llmload-histograms") + link("files/tiers.csv", "tiers.csv", "llmload-tiers") +
    link("report", "report so far &#8599;", "llmload-report") + '<span id="llmload-status"></span>';
  bar.querySelector("#llmload-histograms").style.display = "none";  // shown instead of samples.csv when histograms only
  // collapsible: on a narrow window the status line wraps to several lines; the toggle keeps it to one (remembered)
  const toggle = document.createElement("button");
  toggle.id = "llmload-toggle";
  toggle.type = "button";
  toggle.style.cssText = "margin-left:auto;background:none;border:1px solid #8ab4ff;color:#8ab4ff;border-radius:3px;" +
    "font:12px system-ui,sans-serif;cursor:pointer;padding:1px 6px";
  const status = bar.querySelector("#llmload-status");
  const fold = folded => {
    status.style.display = folded ? "none" : "";
    toggle.textContent = folded ? "show status ▴" : "hide ▾";
    try { localStorage.setItem("llmload-bar-folded", folded ? "1" : ""); } catch (e) { /* private mode */ }
    document.body.style.paddingBottom = (bar.offsetHeight + 8) + "px";
  };
  toggle.onclick = () => fold(status.style.display !== "none");
  bar.appendChild(toggle);
  const banner = document.createElement("div");  // live warnings (overload, the SDK's ceiling): hidden when none
  banner.id = "llmload-banner";
  banner.setAttribute("role", "alert");
  banner.style.cssText = "display:none;flex-basis:100%;padding:6px 10px;background:#b71c1c;color:#fff;" +
    "font-weight:600;border-radius:4px";
  bar.prepend(banner);
  document.body.appendChild(bar);
  document.body.style.paddingBottom = "36px";
  let folded = false;
  try { folded = !!localStorage.getItem("llmload-bar-folded"); } catch (e) { /* private mode */ }
  fold(folded);
  async function poll() {
    try {
      const resp = await fetch(base + "data.json?since=1e12", {credentials: "same-origin"});
      if (resp.ok) {
        const d = await resp.json();
        const slo = d.tiers.length ? d.tiers[d.tiers.length - 1].slo_text : "-";
        const sick = d.health.filter(h => h.warning).map(h => `${esc(h.worker)}: ${esc(h.warning)}`);
        const generators = !d.health.length ? "" : sick.length ?
          ` · <b style="color:#ffb74d">generators (last 10 s): ${sick.join("; ")}</b>` : " · generators ok";
        const warnings = d.warnings || [];
        banner.innerHTML = warnings.map(w => `&#9888; ${esc(w)}`).join("<br>");
        banner.style.display = warnings.length ? "block" : "none";
        const histOnly = !!d.note;  // --ship histograms: no samples.csv, the histograms instead
        document.getElementById("llmload-samples").style.display = histOnly ? "none" : "";
        document.getElementById("llmload-histograms").style.display = histOnly ? "" : "none";
        const stopping = d.state === "cleanup" || d.state === "stopping";  // the page is told "running" meanwhile
        document.getElementById("llmload-status").innerHTML =
          (stopping ? `<b id="llmload-stopping">stopping: requests in flight finish (at most --stop-timeout)</b> · ` : "") +
          (d.run_dir ? `writes to <code>${esc(d.run_dir)}</code> · ` : "") +
          (d.warmup ? `<span id="llmload-warmup">${esc(d.warmup)}</span> · ` : "") +
          (histOnly ? `<span id="llmload-note" title="${esc(d.note)}">histograms only (--ship histograms)</span> · ` : "") +
          `${esc(d.knee.text)} · ` +
          `${esc(d.saturation.text)} · SLO ${esc(d.slo_profile)}: ${esc(slo)}` + generators;
        document.body.style.paddingBottom = (bar.offsetHeight + 8) + "px";  // never hide the page's end
      }
    } catch (e) { /* the next poll tries again */ }
    setTimeout(poll, 2000);
  }
  poll();
  // The class picker's shape select opens on "Default" (no shape: one user, no tiers): pick the locustfile's
  // shape instead, once per form, as a user would (the native setter and a change event, which React reads).
  function defaultShape() {
    document.querySelectorAll("select[name=shapeClass]:not([data-llmload])").forEach(select => {
      select.dataset.llmload = "1";
      const shapes = [...select.options].map(o => o.value).filter(v => v !== "Default");
      if (select.value !== "Default" || !shapes.length) return;
      Object.getOwnPropertyDescriptor(HTMLSelectElement.prototype, "value").set.call(select, shapes[0]);
      select.dispatchEvent(new Event("change", {bubbles: true}));
    });
  }
  new MutationObserver(defaultShape).observe(document.body, {childList: true, subtree: true});
  defaultShape();
})();
