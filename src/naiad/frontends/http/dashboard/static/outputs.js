// Showing a response: each output tensor as a table (1-D: one row; 2-D: a matrix;
// more: flattened with an index column), at most MAX_CELLS cells; classification
// results (BYTES "score:index:label") as a table of labels and scores.

import { jsonText } from "./api.js";
import { h, table } from "./dom.js";
import { product } from "./tensors.js";

const MAX_CELLS = 300;

export function outputsView(outputs, { classified = new Set() } = {}) {
  return h("div", { class: "outputs" }, (outputs || []).map((o) => outputView(o, classified.has(o.name))));
}

function outputView(o, classified) {
  const shape = o.shape || [];
  const title = h("h4", {}, h("code", {}, o.name), " ", h("span", { class: "muted" }, `${o.datatype} [${shape.join(", ")}]`));
  const data = o.data;
  if (!Array.isArray(data)) {
    const why = o.parameters && o.parameters.binary_data_size ? "sent as binary data" : "no data in the response";
    return h("section", { class: "output", dataset: { output: o.name } }, title, h("p", { class: "muted" }, why));
  }
  const body = classified && o.datatype === "BYTES" ? classificationTable(o) : tensorTable(o.name, data, shape, o.datatype);
  return h("section", { class: "output", dataset: { output: o.name } }, title, body);
}

/** Triton's classification strings: "score:index:label" (label optional). */
export function parseClassification(item) {
  const text = String(item);
  const first = text.indexOf(":");
  const second = first < 0 ? -1 : text.indexOf(":", first + 1);
  const score = Number(first < 0 ? text : text.slice(0, first));
  const index = first < 0 ? "" : text.slice(first + 1, second < 0 ? undefined : second);
  const label = second < 0 ? "" : text.slice(second + 1);
  return { score, index, label };
}

function classificationTable(o) {
  const rows = o.data.map((item, rank) => {
    const c = parseClassification(item);
    return h("tr", { dataset: { label: c.label, index: c.index } },
      h("td", { class: "num" }, String(rank + 1)),
      h("td", { class: "label" }, c.label || "—"),
      h("td", { class: "num score" }, Number.isFinite(c.score) ? c.score.toFixed(4) : String(item)),
      h("td", { class: "bar-cell" }, scoreBar(c.score)),
      h("td", { class: "num" }, c.index));
  });
  return table({
    id: `output-${o.name}`,
    className: "data classification",
    caption: `${o.name}: top classes`,
    head: ["#", "Label", "Score", "", "Class index"],
    rows,
  });
}

function scoreBar(score) {
  const bar = h("span", { class: "bar", "aria-hidden": "true" });
  if (Number.isFinite(score)) bar.style.width = `${Math.max(0, Math.min(1, score)) * 100}%`;
  return h("span", { class: "bar-track" }, bar);
}

function cell(v) {
  if (typeof v === "number") return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
  if (typeof v === "boolean") return v ? "true" : "false";
  return typeof v === "string" ? v : JSON.stringify(v);
}

function tensorTable(name, data, shape, datatype) {
  const count = data.length;
  const capped = data.slice(0, MAX_CELLS);
  const note = count > MAX_CELLS ? h("p", { class: "note" }, `Showing the first ${MAX_CELLS} of ${count} values.`) : null;
  const textual = datatype === "BYTES" ? " text" : "";
  // a leading batch dimension of 1 is dropped for the layout (the shape above says it)
  const dims = shape.length > 1 && shape[0] === 1 ? shape.slice(1) : shape;
  let t;
  if (dims.length <= 1) {
    t = table({
      id: `output-${name}`,
      className: `data tensor row${textual}`,
      caption: name,
      head: capped.map((_, i) => String(i)),
      rows: [h("tr", {}, capped.map((v) => h("td", { class: "num" }, cell(v))))],
    });
  } else if (dims.length === 2) {
    const cols = dims[1];
    const rows = [];
    for (let r = 0; r * cols < capped.length; r++) {
      rows.push(h("tr", {}, h("th", { scope: "row" }, String(r)), capped.slice(r * cols, (r + 1) * cols).map((v) => h("td", { class: "num" }, cell(v)))));
    }
    t = table({ id: `output-${name}`, className: `data tensor matrix${textual}`, caption: name, head: ["", ...Array.from({ length: cols }, (_, i) => String(i))], rows });
  } else {
    const rows = capped.map((v, i) => h("tr", {}, h("th", { scope: "row" }, `[${unravel(i, dims).join(", ")}]`), h("td", { class: "num" }, cell(v))));
    t = table({ id: `output-${name}`, className: `data tensor flat${textual}`, caption: name, head: ["Index", "Value"], rows });
  }
  if (count !== product(shape) && shape.length) {
    return h("div", {}, t, note, h("p", { class: "note" }, `The shape says ${product(shape)} values; the response has ${count}.`));
  }
  return h("div", {}, t, note);
}

function unravel(i, dims) {
  const out = [];
  for (let k = dims.length - 1; k >= 0; k--) {
    out.unshift(i % dims[k]);
    i = Math.floor(i / dims[k]);
  }
  return out;
}

/** The table a decoupled model's responses go into, one row per response as it arrives. */
export function streamTable() {
  const body = h("tbody");
  const box = table({ id: "stream-table", className: "data stream", caption: "Streamed responses", head: ["#", "Outputs"], rows: [] });
  box.querySelector("table").replaceChild(body, box.querySelector("tbody"));
  return { box, body };
}

export function streamRow(index, event) {
  const { model_name: _n, model_version: _v, ...outputs } = event;
  return h("tr", { dataset: { index: String(index) } },
    h("td", { class: "num" }, String(index)),
    h("td", {}, h("code", { class: "json" }, jsonText(outputs))));
}
