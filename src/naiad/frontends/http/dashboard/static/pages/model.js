// One model (a version, or the one the server picks): metadata, the try-it form,
// inference statistics and the config as config.pbtxt text. Each part is fetched on
// its own, so a restricted category (say model-config) leaves the others working.

import { dashboardModelPath, getJSON, getText, modelPath, postJSON } from "../api.js";
import { inlineError } from "../banner.js";
import { facts, formatBytes, formatLatency, formatNumber, h, replace, table } from "../dom.js";
import { batchingOf, instancesOf, isDecoupled, platformOf, trafficSplitOf } from "../model_info.js";
import { tryItForm } from "../tryit.js";

export async function render(main, { name, version }, ctx) {
  document.title = `${name} · naiad`;
  const opts = { signal: ctx.signal };
  const section = (id, title, ...rest) => h("section", { class: "card", id, "aria-labelledby": `${id}-title` }, h("h2", { id: `${id}-title` }, title), ...rest);
  const summary = h("div", { id: "model-summary" });
  const metaBox = section("model-metadata", "Inputs and outputs", h("p", { class: "loading" }, "Loading…"));
  const tryBox = section("tryit", "Try it", h("p", { class: "loading" }, "Loading…"));
  const statsBox = section("model-statistics", "Statistics", h("p", { class: "loading" }, "Loading…"));
  const configBox = section("model-config", "Config", h("p", { class: "loading" }, "Loading…"));
  const shadowBox = h("div", { id: "model-shadow-box" });
  const crumbs = h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/models" }, "Models"), " / ", name, version ? ` / ${version}` : "");
  replace(main, crumbs,
    h("div", { class: "page-head" }, h("h1", {}, name, version ? h("span", { class: "muted" }, ` version ${version}`) : null), h("span", { id: "model-state" })),
    summary,
    h("div", { class: "model-grid" }, h("div", { class: "col-main" }, tryBox), h("div", { class: "col-side" }, metaBox, statsBox, shadowBox)),
    configBox);

  const [metadata, config] = await Promise.all([
    getJSON(modelPath(name, version), opts).catch((err) => ({ error: err })),
    getJSON(`${modelPath(name, version)}/config`, opts).catch((err) => ({ error: err })),
  ]);
  if (!ctx.active) return;
  showState(name, version, ctx);

  const cfg = config.error ? null : config;
  replace(summary, cfg ? modelSummary(cfg, metadata) : null);

  if (metadata.error) {
    replace(metaBox, h("h2", { id: "model-metadata-title" }, "Inputs and outputs"), inlineError(metadata.error, "Metadata"));
    replace(tryBox, h("h2", { id: "tryit-title" }, "Try it"), h("p", { class: "muted" }, "Needs the model's metadata (see the message above)."));
  } else {
    replace(metaBox, h("h2", { id: "model-metadata-title" }, "Inputs and outputs"), metadataView(metadata, cfg));
    const refreshStats = () => { loadStats(name, version, statsBox, ctx); loadShadow(name, shadowBox, ctx); };
    const form = tryItForm({ name, version, metadata, config: cfg, ctx, onDone: refreshStats });
    replace(tryBox, h("h2", { id: "tryit-title" }, "Try it"), cfg ? null : h("p", { class: "note" }, "The config could not be read, so the form guesses shapes from the metadata."), form);
  }
  loadStats(name, version, statsBox, ctx);
  loadShadow(name, shadowBox, ctx);
  loadConfigText(name, version, configBox, config.error, ctx);
}

/** The model's shadow (naiad.shadow_* parameters): its candidate and how it compares. */
async function loadShadow(name, box, ctx) {
  try {
    const doc = await getJSON("dashboard:shadows", { signal: ctx.signal });
    if (!ctx.active) return;
    const s = (doc.shadows || []).find((x) => x.model === name);
    if (!s) { replace(box); return; }
    const pct = (v) => (v === null || v === undefined ? "—" : `${formatNumber(100 * v, 4)}%`);
    replace(box, h("section", { class: "card", id: "model-shadow", "aria-labelledby": "model-shadow-title" },
      h("h2", { id: "model-shadow-title" }, "Shadow"),
      h("p", { class: "muted small" }, "A share of the requests also runs on the candidate; its answers are compared, never returned."),
      facts([
        ["Candidate", s.shadow, "shadow-candidate"],
        ["Share of requests", pct(s.fraction), "shadow-fraction"],
        ["Shadowed / skipped / failed", `${formatNumber(s.requests)} / ${formatNumber(s.skipped)} / ${formatNumber(s.failures)}`, "shadow-requests"],
        ["Latency served / shadow", `${formatLatency(s.served_us)} / ${formatLatency(s.shadow_us)}`, "shadow-latency"],
        ["Largest difference (abs / rel)", `${formatNumber(s.max_abs_diff, 3)} / ${formatNumber(s.max_rel_diff, 3)}`, "shadow-diff"],
        ["Same class", pct(s.agreement), "shadow-agreement"],
      ], { class: "facts stats-facts" })));
  } catch (err) {
    // the statistics category may be restricted; the statistics card says so already
    if (err.name !== "AbortError") replace(box);
  }
}

async function showState(name, version, ctx) {
  const el = document.getElementById("model-state");
  try {
    const index = await postJSON("/v2/repository/index", {}, { signal: ctx.signal });
    const entries = index.filter((m) => m.name === name && (!version || m.version === version));
    if (!entries.length || !el) return;
    const e = entries[entries.length - 1];
    const state = e.state || "UNLOADED";
    replace(el, h("span", { class: `state state-${state.toLowerCase()}`, dataset: { state } }, state), e.reason ? h("span", { class: "reason" }, ` ${e.reason}`) : null);
  } catch {
    // the index may be restricted (model-repository); the state is a nicety here
  }
}

function modelSummary(cfg, metadata) {
  return facts([
    ["Platform", platformOf(cfg, metadata)],
    ["Versions", metadata && metadata.versions ? metadata.versions.join(", ") : ""],
    ["Instances", instancesOf(cfg)],
    ["Batching", h("span", {}, batchingOf(cfg).join(" · "))],
    ["Decoupled", isDecoupled(cfg) ? "yes" : "no"],
    ...(trafficSplitOf(cfg) ? [["Traffic split", trafficSplitOf(cfg), "model-split"]] : []),
  ], { class: "facts inline", id: "model-facts" });
}

function metadataView(metadata, cfg) {
  const rows = (list, kind) => list.map((t) => {
    const extra = cfg && (cfg[kind] || []).find((c) => c.name === t.name);
    const notes = [];
    if (extra && extra.format && extra.format !== "FORMAT_NONE") notes.push(extra.format.replace("FORMAT_", ""));
    if (extra && extra.optional) notes.push("optional");
    if (extra && extra.label_filename) notes.push(`labels: ${extra.label_filename}`);
    return h("tr", { dataset: { tensor: t.name } }, h("th", { scope: "row" }, h("code", {}, t.name)), h("td", {}, t.datatype), h("td", { class: "shape" }, `[${t.shape.join(", ")}]`), h("td", { class: "muted" }, notes.join(", ")));
  });
  const head = ["Name", "Datatype", "Shape", ""];
  return h("div", {},
    h("h3", {}, "Inputs"), table({ id: "meta-inputs", className: "data compact", caption: "Inputs", head, rows: rows(metadata.inputs || [], "input") }),
    h("h3", {}, "Outputs"), table({ id: "meta-outputs", className: "data compact", caption: "Outputs", head, rows: rows(metadata.outputs || [], "output") }),
    h("p", { class: "muted small" }, "Shapes as the server reports them: -1 is any size (for a batching model, the first -1 is the batch)."));
}

async function loadStats(name, version, box, ctx) {
  const title = h("h2", { id: "model-statistics-title" }, "Statistics");
  try {
    const doc = await getJSON(`${modelPath(name, version)}/stats`, { signal: ctx.signal });
    if (!ctx.active) return;
    replace(box, title, (doc.model_stats || []).map(statsView));
    if (!(doc.model_stats || []).length) box.append(h("p", { class: "muted" }, "No statistics (is the model loaded?)."));
  } catch (err) {
    if (err.name !== "AbortError") replace(box, title, inlineError(err, "Statistics"));
  }
}

function statsView(s) {
  const st = s.inference_stats || {};
  const avg = (d) => (d && d.count ? formatLatency(d.ns / d.count / 1000) : "—");
  const last = Number(s.last_inference) ? new Date(Number(s.last_inference)).toLocaleString() : "never";
  return h("div", { class: "stats", dataset: { version: s.version } },
    facts([
      ["Version", s.version],
      ["Successful", formatNumber(st.success ? st.success.count : 0), `stats-success-${s.version}`],
      ["Failed", formatNumber(st.fail ? st.fail.count : 0), `stats-fail-${s.version}`],
      ["Inferences / executions", `${formatNumber(s.inference_count)} / ${formatNumber(s.execution_count)}`],
      ["Average request", avg(st.success)],
      ["Average queue", avg(st.queue)],
      ["Average compute (in / infer / out)", `${avg(st.compute_input)} / ${avg(st.compute_infer)} / ${avg(st.compute_output)}`],
      ["Last inference", last],
      ["Memory at load", memoryOf(s), `stats-memory-${s.version}`],
    ], { class: "facts stats-facts" }),
    (s.batch_stats || []).length ? table({
      className: "data compact",
      caption: "Batches",
      head: ["Batch size", "Executions", "Average compute"],
      rows: s.batch_stats.map((b) => h("tr", {}, h("td", { class: "num" }, String(b.batch_size)), h("td", { class: "num" }, formatNumber(b.compute_infer ? b.compute_infer.count : 0)), h("td", { class: "num" }, avg(b.compute_infer)))),
    }) : null);
}

/** The statistics' memory_usage as "37.5 MiB host" (and "1 GiB GPU 0"); "—" when not measured. */
function memoryOf(s) {
  const parts = (s.memory_usage || []).map((m) => `${formatBytes(Number(m.byte_size))} ${m.type === "GPU" ? `GPU ${m.id}` : "host"}`);
  return parts.length ? parts.join(" · ") : null;
}

async function loadConfigText(name, version, box, configError, ctx) {
  const title = h("h2", { id: "model-config-title" }, "Config");
  try {
    const text = await getText(`${dashboardModelPath(name, version)}/config.pbtxt`, { signal: ctx.signal });
    if (!ctx.active) return;
    replace(box, title, h("p", { class: "muted small" }, "The loaded config, with the server's defaults filled in, as config.pbtxt text."), h("pre", { class: "code", id: "config-pbtxt", tabindex: "0" }, text));
  } catch (err) {
    if (err.name === "AbortError") return;
    // the same failure as the JSON config (a model not loaded) was reported once already
    replace(box, title, configError && configError.message === err.message ? h("p", { class: "inline-error" }, err.message) : inlineError(err, "Config"));
  }
}
