// The Server page: what runs and where, and live figures polled once a second while
// the page is shown and the tab is visible. Throughput is computed here from the
// change of the cumulative success counters between two polls; p50/p99 come from the
// server (requests finished in its last ~2 s). With residency on (a memory budget or
// an idle time), a Residency card follows, polled with the live figures.

import { getJSON } from "../api.js";
import { clearError, inlineError, showError } from "../banner.js";
import { drawLineChart, legend } from "../chart.js";
import { facts, formatBytes, formatDuration, formatLatency, formatNumber, h, replace, table } from "../dom.js";
import { fetchResidency, residencyCard, updateResidency } from "../residency.js";

const POINTS = 120; // at one poll a second: two minutes
const WINDOW_MS = POINTS * 1000;

// Kept across visits to the page, so coming back shows the recent past.
const history = { throughput: [], failures: [], p50: [], p99: [], previous: null };

export async function render(main, _params, ctx) {
  document.title = "Server · naiad";
  const factsBox = h("section", { class: "card", "aria-labelledby": "facts-title" }, h("h2", { id: "facts-title" }, "Overview"), h("p", { class: "loading" }, "Loading…"));
  const live = liveSection();
  // the Residency card's box: data-residency "" (not known yet), "on", "off" or "hidden" (restricted)
  const residency = { box: h("div", { id: "residency-box", dataset: { residency: "" } }), card: null, asking: false, busy: false };
  replace(main, h("div", { class: "page-head" }, h("h1", {}, "Server")), factsBox, live.section, residency.box);

  // residency is asked for once the restrictions are known (it needs the model-repository header)
  const askResidency = (restricted) => {
    residency.restricted = restricted;
    residency.asking = true;
    refreshResidency(ctx, residency);
  };
  getJSON("dashboard:server", { signal: ctx.signal })
    .then((info) => {
      replace(factsBox, h("h2", { id: "facts-title" }, "Overview"), serverFacts(info));
      askResidency(info.restricted || {});
    })
    .catch((err) => {
      if (err.name === "AbortError") return;
      replace(factsBox, h("h2", { id: "facts-title" }, "Overview"), inlineError(err, "Server facts"));
      askResidency(undefined);
    });

  startPolling(ctx, live, residency);
}

/** Show the Residency card (made on the first answer that says residency is on), or
 * stop asking when it is off or restricted. Failures leave it to the next poll. */
async function refreshResidency(ctx, residency) {
  if (!residency.asking || residency.busy) return;
  residency.busy = true;
  try {
    const doc = await fetchResidency(residency.restricted, ctx.signal);
    if (!ctx.active) return;
    if (!doc || !doc.enabled) {
      residency.asking = false;
      residency.card = null;
      replace(residency.box);
      residency.box.dataset.residency = doc ? "off" : "hidden";
      return;
    }
    if (!residency.card) {
      residency.card = residencyCard();
      replace(residency.box, residency.card.section);
    }
    updateResidency(residency.card, doc);
    residency.box.dataset.residency = "on";
  } catch (err) {
    if (err.name === "AbortError") return;
    // the live figures' banner says when the server is not answering
    if (residency.card) residency.card.status.textContent = `Residency unavailable (${err.status ? `HTTP ${err.status}` : "no answer"}); retrying.`;
  } finally {
    residency.busy = false;
  }
}

function serverFacts(info) {
  const endpoints = Object.entries(info.endpoints || {});
  const restricted = Object.entries(info.restricted || {});
  return facts([
    ["Version", h("span", {}, `naiad ${info.version}`, h("span", { class: "muted" }, ` · Triton protocol ${info.triton_version}`)), "server-version"],
    ["Uptime", h("span", { title: `started ${info.start_time}` }, formatDuration(info.uptime_s)), "server-uptime"],
    ["Model control", h("span", { class: `mode mode-${info.model_control_mode}` }, info.model_control_mode), "server-mode"],
    ["Repositories", info.repositories ? h("ul", { class: "plain" }, info.repositories.map((r) => h("li", {}, h("code", {}, r)))) : hidden(info), "server-repositories"],
    ["Endpoints", h("ul", { class: "plain" }, endpoints.map(([k, v]) => h("li", {}, h("span", { class: "key" }, k), " ", h("code", {}, v)))), "server-endpoints"],
    ["Process", info.pid === null ? h("span", {}, info.workers > 1 ? `worker ${info.worker} of ${info.workers} · ` : "", hidden(info)) : `pid ${info.pid}${info.workers > 1 ? ` · worker ${info.worker} of ${info.workers}` : ""}`, "server-process"],
    ["Restricted APIs", restricted.length ? h("ul", { class: "plain" }, restricted.map(([cat, header]) => h("li", {}, cat, " → header ", h("code", {}, header)))) : "none", "server-restricted"],
    ["Extensions", h("ul", { class: "chips" }, (info.extensions || []).map((e) => h("li", {}, e))), "server-extensions"],
  ], { class: "facts server-facts" });
}

/** Where the repositories live and the pid are shown with the model-repository header only. */
function hidden(info) {
  const header = (info.restricted || {})["model-repository"];
  return h("span", { class: "muted" }, "hidden: needs the ", h("code", {}, header || "model-repository"), " header (", h("a", { href: "#/settings" }, "Access settings"), ")");
}

function liveSection() {
  const readout = (id, label, unit) => h("div", { class: "readout" }, h("span", { class: "readout-label" }, label), h("span", { class: "readout-value" }, h("span", { id }, "—"), unit ? h("span", { class: "unit" }, ` ${unit}`) : null));
  const throughput = h("canvas", { id: "chart-throughput", class: "chart", role: "img", "aria-label": "Throughput over the last two minutes" });
  const latency = h("canvas", { id: "chart-latency", class: "chart", role: "img", "aria-label": "p50 and p99 latency over the last two minutes" });
  const status = h("p", { class: "live-status muted", id: "live-status" }, "Starting…");
  const tableBox = h("div", { id: "live-table-box" });
  const section = h("section", { class: "card", "aria-labelledby": "live-title" },
    h("div", { class: "card-head" }, h("h2", { id: "live-title" }, "Live"), status),
    h("div", { class: "readouts" },
      readout("throughput-now", "Throughput", "infer/s"),
      readout("failures-now", "Failures", "/s"),
      readout("p50-now", "p50 (worst model)"),
      readout("p99-now", "p99 (worst model)"),
      readout("pending-now", "Queued now")),
    h("div", { class: "charts" },
      h("figure", { class: "chart-box" }, h("figcaption", {}, "Throughput (infer/s, all models)"), throughput,
        legend([{ label: "successful", color: 1 }, { label: "failed", color: 3 }])),
      h("figure", { class: "chart-box" }, h("figcaption", {}, "Latency (worst model)"), latency,
        legend([{ label: "p50", color: 2 }, { label: "p99", color: 4 }]))),
    h("h3", {}, "Per model"),
    tableBox);
  return { section, throughput, latency, status, tableBox };
}

function startPolling(ctx, live, residency) {
  let timer = null;
  let failing = false;
  const tick = async () => {
    timer = null;
    if (!ctx.active) return;
    if (document.hidden) {
      live.status.textContent = "Paused while the tab is hidden.";
      return;
    }
    try {
      const sample = await getJSON("dashboard:live", { signal: ctx.signal });
      if (failing) clearError();
      failing = false;
      update(live, sample);
      await refreshResidency(ctx, residency);
    } catch (err) {
      if (err.name === "AbortError") return;
      failing = true;
      live.status.textContent = `Live figures unavailable (${err.status ? `HTTP ${err.status}` : "no answer"}); retrying.`;
      showError(err, "Live figures");
    }
    if (ctx.active && !timer) timer = setTimeout(tick, 1000);
  };
  const onVisible = () => {
    if (!document.hidden && !timer && ctx.active) tick();
  };
  const onResize = () => draw(live);
  document.addEventListener("visibilitychange", onVisible);
  window.addEventListener("resize", onResize);
  ctx.onLeave(() => {
    clearTimeout(timer);
    document.removeEventListener("visibilitychange", onVisible);
    window.removeEventListener("resize", onResize);
  });
  draw(live);
  tick();
}

function push(series, point) {
  series.push(point);
  if (series.length > POINTS) series.splice(0, series.length - POINTS);
}

/** Add one poll's figures to the history and show them. */
function update(live, sample) {
  const t = sample.time_ms;
  const prev = history.previous;
  const dt = prev ? (t - prev.time_ms) / 1000 : 0;
  const rows = sample.models.map((m) => {
    const key = `${m.name}/${m.version}`;
    const before = prev && prev.models.get(key);
    const rate = (now, then) => (before && dt > 0 ? Math.max(0, now - then) / dt : null);
    return { ...m, key, throughput: before ? rate(m.success, before.success) : null, failRate: before ? rate(m.fail, before.fail) : null };
  });
  history.previous = { time_ms: t, models: new Map(rows.map((r) => [r.key, r])) };
  const sum = (key) => (prev && dt > 0 ? rows.reduce((acc, r) => acc + (r[key] || 0), 0) : null);
  const worst = (key) => {
    const values = rows.map((r) => r[key]).filter((v) => v !== null && v !== undefined);
    return values.length ? Math.max(...values) : null;
  };
  const gap = prev && dt > 5; // the tab was hidden: break the lines rather than join them
  for (const series of ["throughput", "failures", "p50", "p99"]) if (gap) push(history[series], [t - 1000, null]);
  const total = sum("throughput");
  const failures = sum("failRate");
  const p50 = worst("p50_us");
  const p99 = worst("p99_us");
  push(history.throughput, [t, total]);
  push(history.failures, [t, failures]);
  push(history.p50, [t, p50]);
  push(history.p99, [t, p99]);
  history.end = t;

  setReadout("throughput-now", total, (v) => v.toFixed(1));
  setReadout("failures-now", failures, (v) => v.toFixed(1));
  setReadout("p50-now", p50, formatLatency);
  setReadout("p99-now", p99, formatLatency);
  setReadout("pending-now", rows.reduce((acc, r) => acc + (r.pending || 0), 0), String);
  const uptime = document.getElementById("server-uptime");
  if (uptime) uptime.firstChild.textContent = formatDuration(sample.uptime_s);
  live.status.textContent = `Updated ${new Date(t).toLocaleTimeString()} · every second`;
  replace(live.tableBox, modelTable(rows));
  draw(live);
}

function setReadout(id, value, format) {
  const el = document.getElementById(id);
  if (!el) return;
  el.textContent = value === null || value === undefined ? "—" : format(value);
  el.dataset.value = value === null || value === undefined ? "" : String(value);
}

function draw(live) {
  if (!live.throughput.isConnected) return;
  const end = history.end || Date.now();
  drawLineChart(live.throughput, [
    { label: "successful", color: 1, points: history.throughput },
    { label: "failed", color: 3, points: history.failures },
  ], { end, windowMs: WINDOW_MS, format: (v) => formatNumber(v, 3) });
  drawLineChart(live.latency, [
    { label: "p50", color: 2, points: history.p50 },
    { label: "p99", color: 4, points: history.p99 },
  ], { end, windowMs: WINDOW_MS, format: formatLatency });
}

function modelTable(rows) {
  if (!rows.length) return h("p", { class: "muted" }, "No model is loaded.");
  const body = rows.map((r) => h("tr", { dataset: { model: r.name, version: r.version } },
    h("th", { scope: "row" }, h("a", { href: `#/models/${encodeURIComponent(r.name)}/${encodeURIComponent(r.version)}` }, r.name)),
    h("td", { class: "num" }, r.version),
    h("td", { class: "num c-throughput" }, r.throughput === null ? "—" : r.throughput.toFixed(1)),
    h("td", { class: "num c-p50" }, formatLatency(r.p50_us)),
    h("td", { class: "num c-p99" }, formatLatency(r.p99_us)),
    h("td", { class: "num c-pending" }, String(r.pending)),
    h("td", { class: "num c-success" }, formatNumber(r.success)),
    h("td", { class: `num c-fail${r.fail ? " bad" : ""}` }, formatNumber(r.fail)),
    h("td", { class: "num c-memory" }, formatBytes(r.memory_bytes))));
  return table({
    id: "live-models",
    caption: "Per-model live figures",
    className: "data",
    head: ["Model", "Version", "Infer/s", "p50", "p99", "Queue", "Success", "Failures", "Memory"],
    rows: body,
  });
}
