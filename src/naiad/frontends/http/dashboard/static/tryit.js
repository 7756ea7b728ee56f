// The "Try it" form of a model: a field per input generated from its metadata and
// config (JSON, text lines for BYTES, or an image upload for image-shaped inputs),
// sent to /infer (or /generate_stream for decoupled models), the answer shown below.

import { modelPath, postJSON } from "./api.js";
import { describe, showError } from "./banner.js";
import { h, replace } from "./dom.js";
import { configInput, configOutput, isDecoupled } from "./model_info.js";
import { outputsView, streamRow, streamTable } from "./outputs.js";
import { generateStream } from "./stream.js";
import { exampleValue, imageSpec, imageToTensor, linesToTensor, loadImage, nest, product, randomValue, toTensor } from "./tensors.js";

const PREFILL_LIMIT = 4096; // values; bigger inputs start empty (upload or Random)

export function tryItForm({ name, version, metadata, config, ctx, onDone }) {
  const batching = Boolean(config && Number(config.max_batch_size) > 0);
  const decoupled = isDecoupled(config);
  const fields = (metadata.inputs || []).map((input) => inputField(input, config, batching));
  const status = h("p", { id: "tryit-status", class: "tryit-status" });
  const outputs = h("div", { id: "tryit-outputs" });
  const result = h("section", { id: "tryit-result", class: "tryit-result", "aria-live": "polite", "aria-label": "Result" }, status, outputs);
  const run = h("button", { type: "submit", class: "button primary", id: "tryit-run" }, decoupled ? "Run (stream)" : "Run");
  const stop = h("button", { type: "button", class: "button secondary", id: "tryit-stop", hidden: true }, "Stop");
  const request = h("pre", { class: "code small", id: "tryit-request" });
  const form = h("form", { id: "tryit-form", class: "tryit", novalidate: true },
    h("p", { class: "hint" }, rulesText(batching, decoupled)),
    fields.map((f) => f.element),
    h("div", { class: "button-row" }, run, stop),
    h("details", { class: "request-details" }, h("summary", {}, "Request sent"), request),
    result);

  let running = null;
  stop.addEventListener("click", () => running && running.abort());
  ctx.onLeave(() => running && running.abort());
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (running) return;
    let body;
    try {
      body = buildRequest(fields, metadata, config, decoupled);
    } catch (err) {
      replace(status, h("span", { class: "inline-error", dataset: { outcome: "form-error" } }, describe(err, "Check the input")));
      outputs.replaceChildren();
      showError(err, "Check the input");
      if (err.field) err.field.focus();
      return;
    }
    request.textContent = truncate(JSON.stringify(body, null, 1), 4000);
    running = new AbortController();
    const signal = anySignal([ctx.signal, running.signal]);
    run.disabled = true;
    stop.hidden = !decoupled;
    replace(status, h("span", { class: "pending" }, "Running…"));
    outputs.replaceChildren();
    const started = performance.now();
    try {
      if (decoupled) await stream(name, version, body, { signal, status, outputs, started });
      else await infer(name, version, body, { signal, status, outputs, started, config });
    } catch (err) {
      if (err.name === "AbortError") {
        if (ctx.active) replace(status, h("span", { class: "muted" }, "Stopped."));
      } else {
        replace(status, h("span", { class: "inline-error", dataset: { outcome: "error" } }, describe(err, "The server answered")));
        showError(err, "The server answered");
      }
    } finally {
      running = null;
      run.disabled = false;
      stop.hidden = true;
      if (ctx.active && onDone) onDone();
    }
  });
  return form;
}

function rulesText(batching, decoupled) {
  const parts = ["Type each input as JSON: a nested array in the input's shape or a flat list of its values; BYTES inputs take one element per line."];
  if (batching) parts.push("This model batches: a batch dimension of 1 is added in front unless your array already has it.");
  parts.push("Dimensions of -1 take 1 to 4 values in examples and random fills.");
  if (decoupled) parts.push("This model is decoupled: its responses stream in one by one (generate_stream).");
  return parts.join(" ");
}

function inputField(input, config, batching) {
  const cfg = configInput(config, input.name);
  const datatype = input.datatype;
  // dims without the batch dimension: the config's, else the metadata's less the batch dim
  const dims = cfg ? cfg.dims.map(Number) : batching ? input.shape.slice(1) : input.shape;
  const optional = Boolean(cfg && cfg.optional);
  const bytes = datatype === "BYTES";
  const spec = bytes ? null : imageSpec(dims, cfg && cfg.format);
  const id = `input-${input.name}`;
  const field = { name: input.name, datatype, dims, batching, bytes, spec, image: null, optional };

  const textarea = h("textarea", {
    id, name: input.name, class: "tensor-text", rows: 2,
    spellcheck: false, autocomplete: "off", "aria-describedby": `${id}-hint`,
  });
  field.textarea = textarea;
  const fill = (kind) => {
    field.image = null;
    if (field.imageBox) field.imageBox.classList.remove("has-image");
    textarea.removeAttribute("aria-invalid");
    textarea.disabled = false;
    const value = kind === "random" ? randomValue(datatype, dims) : exampleValue(datatype, dims, 3);
    textarea.value = bytes ? [value].flat(Infinity).join("\n") : compactJSON(value);
    textarea.rows = Math.min(10, Math.max(2, textarea.value.split("\n").length));
  };
  if (product(dims.map((d) => (d < 0 ? 3 : d))) <= PREFILL_LIMIT) fill("example");

  const shapeText = `[${dims.join(", ")}]`;
  const send = optional ? h("input", { type: "checkbox", id: `send-${input.name}` }) : null;
  field.send = send;
  const hint = bytes ? "one element per line" : spec ? "JSON, or upload an image above" : "JSON";
  const element = h("fieldset", { class: "tensor-input", dataset: { input: input.name } },
    h("legend", {}, h("code", {}, input.name), " ", h("span", { class: "muted" }, `${datatype} ${shapeText}`), optional ? h("span", { class: "tag" }, "optional") : null),
    send ? h("label", { class: "check" }, send, " Send this optional input") : null,
    spec ? imageControls(field) : null,
    h("label", { for: id, class: "field-label" }, bytes ? "Text" : "Values", h("span", { class: "muted", id: `${id}-hint` }, ` (${hint}${batching ? "; batch of 1 added" : ""})`)),
    textarea,
    h("div", { class: "button-row" },
      h("button", { type: "button", class: "button small secondary", dataset: { fill: "random", input: input.name }, on: { click: () => fill("random") } }, "Random"),
      h("button", { type: "button", class: "button small secondary", dataset: { fill: "example", input: input.name }, on: { click: () => fill("example") } }, "Example")));
  field.element = element;
  return field;
}

function imageControls(field) {
  const { name, spec } = field;
  const file = h("input", { type: "file", id: `file-${name}`, accept: "image/*" });
  const invert = h("input", { type: "checkbox", id: `invert-${name}` });
  const preview = h("div", { class: "preview", id: `preview-${name}`, "aria-live": "polite" });
  const channels = spec.channels === 1 ? "grey" : spec.channels === 3 ? "RGB" : "RGBA";
  const update = async () => {
    const chosen = file.files && file.files[0];
    if (!chosen) return;
    try {
      const img = field.image && field.image.file === chosen ? field.image.img : await loadImage(chosen);
      const tensor = imageToTensor(img, spec, { datatype: field.datatype, invert: invert.checked });
      field.image = { file: chosen, img, tensor };
      tensor.preview.classList.add("preview-canvas");
      tensor.preview.setAttribute("role", "img");
      tensor.preview.setAttribute("aria-label", `${chosen.name} resized to ${spec.width} × ${spec.height}${invert.checked ? ", inverted" : ""}`);
      replace(preview, tensor.preview, h("span", { class: "muted" }, `${chosen.name} → ${spec.width} × ${spec.height} ${channels}${invert.checked ? ", inverted" : ""}`));
      field.imageBox.classList.add("has-image");
      field.textarea.disabled = true;
      field.textarea.value = tensor.data.length <= PREFILL_LIMIT ? compactJSON(nest(tensor.data, tensor.shape)) : `(${tensor.data.length} values from the image)`;
      field.textarea.rows = Math.min(10, field.textarea.value.split("\n").length);
    } catch (err) {
      field.image = null;
      replace(preview, h("span", { class: "inline-error" }, err.message));
      showError(err, "Image");
    }
  };
  file.addEventListener("change", update);
  invert.addEventListener("change", update);
  const clear = h("button", { type: "button", class: "button small secondary", on: { click: () => {
    file.value = "";
    field.image = null;
    field.imageBox.classList.remove("has-image");
    field.textarea.disabled = false;
    preview.replaceChildren();
  } } }, "Clear image");
  field.imageBox = h("div", { class: "image-input" },
    h("div", { class: "image-controls" },
      h("label", { for: `file-${name}`, class: "field-label" }, `Image (resized to ${spec.width} × ${spec.height}, ${channels}; 0–1 for floats, 0–255 for integers)`),
      file,
      h("label", { class: "check" }, invert, " Invert (dark ink = 1)"),
      clear),
    preview);
  return field.imageBox;
}

function buildRequest(fields, metadata, config, decoupled) {
  const inputs = [];
  for (const f of fields) {
    if (f.send && !f.send.checked) continue;
    let tensor;
    if (f.image) {
      tensor = { shape: f.batching ? [1, ...f.image.tensor.shape] : f.image.tensor.shape, data: f.image.tensor.data };
    } else if (f.bytes) {
      tensor = linesToTensor(f.textarea.value, f.dims, f.batching);
    } else {
      tensor = toTensor(parseField(f), f.dims, f.batching);
    }
    inputs.push({ name: f.name, shape: tensor.shape, datatype: f.datatype, data: tensor.data });
  }
  if (decoupled) return Object.fromEntries(inputs.map((i) => [i.name, i.data]));
  const body = { inputs };
  if (config) body.outputs = (metadata.outputs || []).map((o) => outputRequest(o, config));
  return body;
}

function parseField(f) {
  const text = f.textarea.value.trim();
  const fail = (message) => {
    f.textarea.setAttribute("aria-invalid", "true");
    const err = new Error(`${f.name}: ${message}`);
    err.field = f.textarea;
    return err;
  };
  if (!text) throw fail("no values (type JSON, or press Example or Random)");
  let value;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw fail(`not valid JSON (${e.message})`);
  }
  try {
    toTensor(value, f.dims, f.batching);
  } catch (e) {
    throw fail(e.message);
  }
  f.textarea.removeAttribute("aria-invalid");
  return value;
}

/** Ask outputs with a labels file for the top classes (the classification extension). */
function outputRequest(output, config) {
  const cfg = configOutput(config, output.name);
  if (!cfg || !cfg.label_filename) return { name: output.name };
  const dims = (cfg.dims || []).map(Number);
  const classes = dims.every((d) => d > 0) ? product(dims) : 5;
  return { name: output.name, parameters: { classification: Math.max(1, Math.min(5, classes)) } };
}

async function infer(name, version, body, { signal, status, outputs, started, config }) {
  const response = await postJSON(`${modelPath(name, version)}/infer`, body, { signal });
  const ms = performance.now() - started;
  const classified = new Set((body.outputs || []).filter((o) => o.parameters).map((o) => o.name));
  replace(status, h("span", { class: "success", dataset: { outcome: "ok" } }, `OK · ${ms.toFixed(0)} ms · ${response.model_name || name} version ${response.model_version || version || (config && "latest")}`));
  replace(outputs, outputsView(response.outputs, { classified }));
}

async function stream(name, version, body, { signal, status, outputs, started }) {
  const { box, body: rows } = streamTable();
  replace(outputs, box);
  let failed = null;
  const count = await generateStream(`${modelPath(name, version)}/generate_stream`, body, {
    signal,
    onEvent: (event, index) => {
      rows.append(streamRow(index, event));
      replace(status, h("span", { class: "pending" }, `Streaming… ${index + 1} response${index ? "s" : ""}`));
    },
    onError: (message) => {
      failed = message;
      rows.append(h("tr", { class: "stream-error" }, h("td", {}, "error"), h("td", {}, message)));
    },
  });
  const ms = performance.now() - started;
  if (failed !== null) {
    const err = Object.assign(new Error(failed), { status: 200 });
    replace(status, h("span", { class: "inline-error", dataset: { outcome: "error" } }, describe(err, `Stream failed after ${count} responses`)));
    showError(err, "Stream failed");
  } else {
    replace(status, h("span", { class: "success", dataset: { outcome: "ok", count: String(count) } }, `Done · ${count} response${count === 1 ? "" : "s"} in ${ms.toFixed(0)} ms`));
  }
}

function compactJSON(value) {
  // one row of the innermost dimension per line
  if (!Array.isArray(value) || !value.some(Array.isArray)) return JSON.stringify(value);
  return "[\n" + value.map((row) => " " + JSON.stringify(row)).join(",\n") + "\n]";
}

function truncate(text, n) {
  return text.length > n ? `${text.slice(0, n)}\n… (${text.length - n} more characters)` : text;
}

function anySignal(signals) {
  const controller = new AbortController();
  for (const s of signals) {
    if (s.aborted) controller.abort();
    else s.addEventListener("abort", () => controller.abort(), { once: true });
  }
  return controller.signal;
}
