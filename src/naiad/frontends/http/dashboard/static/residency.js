// Residency (--model-memory-budget, --model-idle-unload-secs, --model-pin): which
// models hold memory, under what budget, and why the others were unloaded. Read from
// /dashboard/api/residency, which the model-repository restriction guards; the
// Server page shows it as a card and the Models page marks the pinned models.

import { accessHeaders, getJSON } from "./api.js";
import { formatBytes, formatDuration, formatNumber, h, replace, table } from "./dom.js";

const CATEGORY = "model-repository";

// The residency states drawn with the repository index's badges (style.css .state-*).
const BADGE = { loaded: "ready", loading: "loading", unloading: "unloading", unloaded: "unloaded", failed: "unavailable", "not loaded": "unloaded" };

/**
 * The residency view, or null when it cannot be read: restricted to a header this
 * tab does not send (asked only when it would pass, so a page does not provoke a
 * 403 on every visit) or refused. `restricted` is the server view's category ->
 * header map; undefined when unknown (the request is then tried).
 */
export async function fetchResidency(restricted, signal) {
  if (!mayAsk(restricted)) return null;
  try {
    return await getJSON("dashboard:residency", { signal });
  } catch (err) {
    if (err.status === 403 || err.status === 404) return null;
    throw err;
  }
}

function mayAsk(restricted) {
  const header = restricted && restricted[CATEGORY];
  if (!header) return true;
  return accessHeaders().some(([name]) => name.toLowerCase() === header.toLowerCase());
}

/** The Server page's card: its frame once, then update(card, doc) on every poll. */
export function residencyCard() {
  const readout = (id, label, extra) => h("div", { class: "readout" }, h("span", { class: "readout-label" }, label), h("span", { class: "readout-value", id }, "—"), extra);
  const bar = h("span", { class: "bar", id: "residency-bar" });
  const share = h("span", { class: "readout-note", id: "residency-share" });
  const status = h("p", { class: "live-status muted", id: "residency-status" });
  const tableBox = h("div", { id: "residency-table-box" });
  const section = h("section", { class: "card", id: "residency", "aria-labelledby": "residency-title" },
    h("div", { class: "card-head" }, h("h2", { id: "residency-title" }, "Residency"), status),
    h("p", { class: "muted small" }, "Models load on their first request; the least recently used idle ones are unloaded to fit the budget or after the idle time. Pinned models stay loaded."),
    h("div", { class: "readouts" },
      readout("residency-budget", "Memory budget"),
      readout("residency-used", "Used by loaded models", [h("span", { class: "bar-track", "aria-hidden": "true" }, bar), share]),
      readout("residency-idle", "Idle unload after"),
      readout("residency-loaded", "Loaded")),
    tableBox);
  return { section, bar, share, status, tableBox };
}

export function updateResidency(card, doc) {
  const budget = doc.budget_bytes;
  const used = doc.used_bytes || 0;
  const models = doc.models || [];
  setValue("residency-budget", budget ? formatBytes(budget) : "none", budget);
  setValue("residency-used", formatBytes(used), used);
  setValue("residency-idle", doc.idle_unload_s ? formatDuration(doc.idle_unload_s) : "never", doc.idle_unload_s);
  const loaded = models.filter((m) => m.state === "loaded").length;
  setValue("residency-loaded", `${loaded} of ${models.length}`, loaded);
  const fraction = budget ? used / budget : null;
  card.bar.parentElement.hidden = fraction === null;
  card.bar.style.width = `${Math.min(1, fraction || 0) * 100}%`;
  card.bar.classList.toggle("high", fraction !== null && fraction >= 0.9 && fraction <= 1);
  card.bar.classList.toggle("over", fraction !== null && fraction > 1);
  card.share.textContent = fraction === null ? "no budget: only idle models are unloaded" : `${formatNumber(100 * fraction, 3)}% of the budget`;
  card.status.textContent = `Updated ${new Date().toLocaleTimeString()} · every second`;
  replace(card.tableBox, residencyTable(models));
}

function setValue(id, text, value) {
  const el = document.getElementById(id);
  if (!el) return;
  el.textContent = text;
  el.dataset.value = value === null || value === undefined ? "" : String(value);
}

/** A residency state as the repository index's badges draw theirs. */
export function stateBadge(state) {
  return h("span", { class: `state state-${BADGE[state] || "unloaded"}`, dataset: { state } }, state);
}

export function pinnedTag() {
  return h("span", { class: "tag pinned", title: "Pinned: never unloaded for the budget or for idleness" }, "pinned");
}

function residencyTable(models) {
  if (!models.length) return h("p", { class: "muted" }, "The repositories have no models.");
  const count = (v) => formatNumber(v || 0);
  const rows = models.map((m) => {
    const evictions = m.evictions || {};
    const link = `#/models/${encodeURIComponent(m.name)}`;
    return h("tr", { dataset: { model: m.name, state: m.state, pinned: String(Boolean(m.pinned)) } },
      h("th", { scope: "row" }, h("a", { href: link }, m.name)),
      h("td", { class: "c-state" }, stateBadge(m.state)),
      h("td", { class: "num c-memory" }, formatBytes(m.memory_bytes)),
      h("td", { class: "num c-idle" }, m.idle_s === null || m.idle_s === undefined ? "—" : formatDuration(m.idle_s)),
      h("td", { class: "c-pinned" }, m.pinned ? pinnedTag() : h("span", { class: "muted" }, "no")),
      h("td", { class: "num c-loads" }, count(m.loads)),
      h("td", { class: "num c-evictions", title: "unloaded to fit the budget / for idleness" }, `${count(evictions.budget)} / ${count(evictions.idle)}`),
      h("td", { class: "num c-waits" }, count(m.load_waits), m.load_wait_avg_ms === null || m.load_wait_avg_ms === undefined ? null : h("span", { class: "muted" }, ` · avg ${formatNumber(m.load_wait_avg_ms, 3)} ms`)),
      h("td", { class: `c-reason ${m.state === "failed" ? "reason" : "muted"}` }, m.reason || ""));
  });
  return table({
    id: "residency-models",
    caption: "Residency of each model",
    className: "data residency",
    head: ["Model", "State", "Memory", "Idle", "Pinned", "Loads", "Evictions (budget / idle)", "Load waits", "Reason"],
    rows,
  });
}
