// The Models page: the repository index (every model and version with its state and
// load error), each loaded model's config summary, and load / unload / reload in
// explicit model control mode (each confirmed in a dialog, the answer shown). With
// residency on, pinned models are marked and a model unloaded to fit the budget (or
// for idleness) shows why without looking like a failure.

import { getJSON, modelPath, postJSON } from "../api.js";
import { describe, inlineError, showError } from "../banner.js";
import { confirmAction } from "../dialog.js";
import { h, replace, table } from "../dom.js";
import { batchingOf, instancesOf, isDecoupled, platformOf } from "../model_info.js";
import { fetchResidency, pinnedTag } from "../residency.js";

const BUSY = new Set(["LOADING", "UNLOADING"]);

export async function render(main, _params, ctx) {
  document.title = "Models · naiad";
  const note = h("p", { id: "mode-note", class: "note", hidden: true });
  const result = h("div", { id: "action-result", class: "action-result", role: "status", "aria-live": "polite" });
  const box = h("div", { id: "models-box" }, h("p", { class: "loading" }, "Loading…"));
  const refresh = h("button", { type: "button", class: "button secondary", id: "models-refresh" }, "Refresh");
  replace(main,
    h("div", { class: "page-head" }, h("h1", {}, "Models"), refresh),
    note, result,
    h("section", { class: "card flush", "aria-label": "Repository index" }, box));

  const page = { ctx, box, note, result, mode: null, restricted: undefined, busy: false };
  refresh.addEventListener("click", () => load(page));
  // The control mode decides whether the buttons can work; without it (a restricted
  // "metadata" category) they stay enabled and the server answers for itself.
  try {
    const info = await getJSON("dashboard:server", { signal: ctx.signal });
    page.mode = info.model_control_mode;
    page.restricted = info.restricted || {};
  } catch (err) {
    if (err.name === "AbortError") throw err;
    page.mode = null;
  }
  if (page.mode && page.mode !== "explicit") {
    note.hidden = false;
    replace(note, "Load, unload and reload need ", h("code", {}, "--model-control-mode explicit"), "; this server runs in ", h("strong", {}, page.mode), " mode, so the buttons are disabled.");
  }
  await load(page);
}

async function load(page) {
  const { ctx, box } = page;
  let index;
  let fallback = null;
  try {
    index = await postJSON("/v2/repository/index", {}, { signal: ctx.signal });
  } catch (err) {
    if (err.name === "AbortError") return;
    // The index is restricted (model-repository) or failed: the loaded models can
    // still be listed from the statistics, which may be open.
    index = await loadedFromStats(ctx);
    if (!index) {
      replace(box, inlineError(err, "Repository index"));
      return;
    }
    showError(err, "Repository index");
    fallback = h("p", { class: "note", id: "index-fallback" }, describe(err, "Repository index"), " ", "Listing the loaded models from their statistics instead; models that are not loaded are not shown.");
  }
  const [configs, residency] = await Promise.all([
    Promise.all(index.map((m) => (m.state === "READY" ? configFor(m, ctx) : null))),
    residencyOf(page),
  ]);
  if (!ctx.active) return;
  replace(box, fallback, modelsTable(page, index, configs, residency));
  // a load or unload still under way: look again shortly
  if (index.some((m) => BUSY.has(m.state))) setTimeout(() => ctx.active && load(page), 500);
}

/** Loaded versions as index entries (READY), from GET /v2/models/stats; null if that fails too. */
async function loadedFromStats(ctx) {
  try {
    const doc = await getJSON("/v2/models/stats", { signal: ctx.signal });
    return (doc.model_stats || []).map((s) => ({ name: s.name, version: s.version, state: "READY" }));
  } catch (err) {
    if (err.name === "AbortError") throw err;
    return null;
  }
}

/** Each model's residency row by name; empty when residency is off or cannot be read. */
async function residencyOf(page) {
  try {
    const doc = await fetchResidency(page.restricted, page.ctx.signal);
    return new Map(doc && doc.enabled ? doc.models.map((r) => [r.name, r]) : []);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    return new Map(); // a nicety here: the index says the state
  }
}

async function configFor(entry, ctx) {
  try {
    return await getJSON(`${modelPath(entry.name, entry.version)}/config`, { signal: ctx.signal });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    return { error: err };
  }
}

function modelsTable(page, index, configs, residency) {
  if (!index.length) return h("p", { class: "empty" }, "The repository has no models.");
  const seen = new Set();
  const rows = index.map((m, i) => {
    const first = !seen.has(m.name);
    seen.add(m.name);
    return modelRow(page, m, configs[i], first, residency.get(m.name));
  });
  return table({
    id: "models-table",
    className: "data models",
    caption: "Models in the repository",
    head: ["Model", "Version", "State", "Platform", "Instances", "Batching", "Decoupled", "Actions"],
    rows,
  });
}

function modelRow(page, m, config, first, resident) {
  const state = m.state || "UNLOADED";
  const link = `#/models/${encodeURIComponent(m.name)}${m.version ? `/${encodeURIComponent(m.version)}` : ""}`;
  const configError = config && config.error;
  const cfg = configError ? null : config;
  // unloaded by residency: the reason says why, it is no error
  const evicted = resident && resident.state === "unloaded";
  return h("tr", { dataset: { model: m.name, version: m.version || "", state, ...(resident ? { pinned: String(resident.pinned) } : {}) } },
    h("th", { scope: "row" }, h("a", { href: link }, m.name), resident && resident.pinned ? pinnedTag() : null),
    h("td", { class: "num" }, m.version || "—"),
    h("td", { class: "state-cell" },
      h("span", { class: `state state-${state.toLowerCase()}`, dataset: { state } }, state),
      m.reason ? h("div", { class: evicted ? "reason calm" : "reason" }, m.reason) : null),
    h("td", {}, configError ? h("span", { class: "muted", title: configError.message }, "config unavailable") : platformOf(cfg) || "—"),
    h("td", {}, instancesOf(cfg) || "—"),
    h("td", { class: "batching" }, batchingOf(cfg).map((line) => h("div", {}, line))),
    h("td", {}, cfg ? (isDecoupled(cfg) ? h("span", { class: "tag" }, "decoupled") : "no") : "—"),
    h("td", { class: "actions" }, first ? actions(page, m.name, state) : null));
}

function actions(page, name, state) {
  const disabled = page.mode !== null && page.mode !== "explicit";
  const button = (action, label, cls) => h("button", {
    type: "button",
    class: `button small ${cls}`,
    dataset: { action, model: name },
    disabled,
    title: disabled ? `Needs --model-control-mode explicit (this server: ${page.mode})` : `${label} ${name}`,
    "aria-label": `${label} ${name}`,
    "aria-describedby": disabled ? "mode-note" : null,
    on: { click: () => act(page, action, name) },
  }, label);
  const ready = state === "READY";
  return h("div", { class: "button-row" },
    ready ? null : button("load", "Load", "primary"),
    ready ? button("reload", "Reload", "secondary") : null,
    ready || state === "UNAVAILABLE" ? button("unload", "Unload", "danger") : null);
}

const WORDS = {
  load: { title: "Load", done: "Loaded", text: "The server loads every version its policy selects." },
  reload: { title: "Reload", done: "Reloaded", text: "The server loads the model again from the repository; requests go to the old copy until the new one is ready." },
  unload: { title: "Unload", done: "Unloaded", text: "The model stops serving: requests to it fail until it is loaded again." },
};

async function act(page, action, name) {
  if (page.busy) return;
  const words = WORDS[action];
  const ok = await confirmAction({
    title: `${words.title} ${name}?`,
    text: words.text,
    confirm: words.title,
    danger: action === "unload",
  });
  if (!ok || !page.ctx.active) return;
  page.busy = true;
  replace(page.result, h("p", { class: "pending" }, `${words.title}ing ${name}…`));
  const verb = action === "unload" ? "unload" : "load";
  try {
    await postJSON(`/v2/repository/models/${encodeURIComponent(name)}/${verb}`, {}, { signal: page.ctx.signal });
    replace(page.result, h("p", { class: "success", dataset: { action, model: name, outcome: "ok" } }, `${words.done} ${name}.`));
  } catch (err) {
    if (err.name === "AbortError") return;
    replace(page.result, h("p", { class: "inline-error", dataset: { action, model: name, outcome: "error" } }, describe(err, `${words.title} ${name} failed`)));
    showError(err, `${words.title} ${name} failed`);
  } finally {
    page.busy = false;
  }
  await load(page);
}
