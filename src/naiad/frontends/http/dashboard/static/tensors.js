// Tensors in the browser: shapes, example and random values of a datatype, the JSON a
// person types turned into {shape, data}, and an image turned into a tensor.
//
// Rules (the Try it form repeats them to the user):
//  - dims of -1 become 1..4 for examples and random values;
//  - a nested array gives its own shape; a flat list fills the input's dims when its
//    length matches them (otherwise it is sent as it is and the server says what's wrong);
//  - for a model with max_batch_size > 0 a batch dimension of 1 is put in front, unless
//    the array already has one more dimension than the input.

const INT_RANGES = {
  INT8: [-128, 127], INT16: [-1000, 1000], INT32: [-1000, 1000], INT64: [-1000, 1000],
  UINT8: [0, 255], UINT16: [0, 1000], UINT32: [0, 1000], UINT64: [0, 1000],
};
const WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"];

export const isFloat = (datatype) => /^(FP|BF)/.test(datatype);
export const isInteger = (datatype) => datatype in INT_RANGES;

/** Model-config type ("TYPE_FP32", "TYPE_STRING") to the protocol's ("FP32", "BYTES"). */
export function protocolType(configType) {
  const t = String(configType || "").replace(/^TYPE_/, "");
  return t === "STRING" ? "BYTES" : t;
}

export function product(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

/** -1 dims replaced: by `fill` (a number) or by a random 1..4. */
export function concreteDims(dims, fill = null) {
  return dims.map((d) => (d >= 0 ? d : fill === null ? 1 + Math.floor(Math.random() * 4) : fill));
}

/** A flat list as nested arrays of `shape` (a scalar for shape []). */
export function nest(flat, shape) {
  if (!shape.length) return flat[0];
  if (shape.length === 1) return flat.slice(0, shape[0]);
  const size = product(shape.slice(1));
  return Array.from({ length: shape[0] }, (_, i) => nest(flat.slice(i * size, (i + 1) * size), shape.slice(1)));
}

/** A nested array's shape and flat values; throws on ragged rows or non-values. */
export function flatten(value) {
  if (!Array.isArray(value)) return { shape: [], data: [value] };
  if (!value.length) return { shape: [0], data: [] };
  const parts = value.map(flatten);
  const inner = JSON.stringify(parts[0].shape);
  if (parts.some((p) => JSON.stringify(p.shape) !== inner)) {
    throw new Error("rows of different lengths: every row of a nested array needs the same shape");
  }
  return { shape: [value.length, ...parts[0].shape], data: parts.flatMap((p) => p.data) };
}

function randomScalar(datatype) {
  if (datatype === "BOOL") return Math.random() < 0.5;
  if (datatype === "BYTES") return WORDS[Math.floor(Math.random() * WORDS.length)];
  if (isInteger(datatype)) {
    const [lo, hi] = INT_RANGES[datatype];
    return lo + Math.floor(Math.random() * (hi - lo + 1));
  }
  return Math.round(Math.random() * 1e4) / 1e4; // floats: 0..1, four decimals
}

function exampleScalar(datatype, i) {
  if (datatype === "BOOL") return i % 2 === 0;
  if (datatype === "BYTES") return WORDS[i % WORDS.length];
  return i + 1;
}

/** Nested example values (1, 2, 3, ...) for `dims` (-1 as 1..4 at random unless told). */
export function exampleValue(datatype, dims, fill = 3) {
  const shape = concreteDims(dims, fill);
  return nest(Array.from({ length: product(shape) }, (_, i) => exampleScalar(datatype, i)), shape);
}

export function randomValue(datatype, dims) {
  const shape = concreteDims(dims);
  return nest(Array.from({ length: product(shape) }, () => randomScalar(datatype)), shape);
}

/**
 * What the user typed (already JSON-parsed) as a request tensor {shape, data} for an
 * input of `dims` (without the batch dimension); `batching`: max_batch_size > 0.
 */
export function toTensor(value, dims, batching) {
  let { shape, data } = flatten(value);
  const known = dims.every((d) => d >= 0);
  if (shape.length === 1 && dims.length > 1 && known && data.length === product(dims)) shape = [...dims];
  if (shape.length === 0 && dims.length >= 1) shape = [1]; // a bare value for a one-element input
  if (batching && shape.length === dims.length) shape = [1, ...shape];
  return { shape, data };
}

/** Text lines as a BYTES tensor (one element per line; a trailing empty line ignored). */
export function linesToTensor(text, dims, batching) {
  const lines = text.replace(/\r\n/g, "\n").split("\n");
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  let shape = [lines.length];
  if (dims.length > 1 && dims.every((d) => d >= 0) && product(dims) === lines.length) shape = [...dims];
  if (batching && shape.length === dims.length) shape = [1, ...shape];
  return { shape, data: lines };
}

/**
 * Whether an input looks like an image: [H, W] (both >= 8), [H, W, C] or [C, H, W]
 * with C of 1, 3 or 4; the config's format (FORMAT_NHWC / FORMAT_NCHW) decides when set.
 * Returns {height, width, channels, layout: "HW" | "HWC" | "CHW"} or null.
 */
export function imageSpec(dims, format) {
  const ok = (n) => n > 0;
  const channels = (c) => [1, 3, 4].includes(c);
  if (dims.length === 2 && dims[0] >= 8 && dims[1] >= 8) return { height: dims[0], width: dims[1], channels: 1, layout: "HW" };
  if (dims.length !== 3 || !dims.every(ok)) return null;
  const [a, b, c] = dims;
  if (format === "FORMAT_NHWC") return channels(c) ? { height: a, width: b, channels: c, layout: "HWC" } : null;
  if (format === "FORMAT_NCHW") return channels(a) ? { height: b, width: c, channels: a, layout: "CHW" } : null;
  if (channels(c) && a >= 8 && b >= 8) return { height: a, width: b, channels: c, layout: "HWC" };
  if (channels(a) && b >= 8 && c >= 8) return { height: b, width: c, channels: a, layout: "CHW" };
  return null;
}

/** Decode an image file into an ImageBitmap-like drawable (an <img>). */
export function loadImage(file) {
  return new Promise((resolve, reject) => {
    const url = URL.createObjectURL(file);
    const img = new Image();
    img.onload = () => {
      URL.revokeObjectURL(url);
      resolve(img);
    };
    img.onerror = () => {
      URL.revokeObjectURL(url);
      reject(new Error(`${file.name} is not an image the browser can read`));
    };
    img.src = url;
  });
}

/**
 * The image resized to spec's width x height (box average when shrinking, like PIL's
 * Image.BOX), over white paper where transparent, as grey (1 channel) or RGB(A) values:
 * 0..1 for floating-point inputs, 0..255 integers otherwise; `invert` makes dark = high.
 * Returns {data (flat, in the input's layout), shape, preview (a canvas of the result)}.
 */
export function imageToTensor(img, spec, { datatype, invert }) {
  const srcW = img.naturalWidth || img.width;
  const srcH = img.naturalHeight || img.height;
  const src = document.createElement("canvas");
  // Shrinking: average whole source pixels; enlarging: let the browser interpolate.
  const drawW = Math.max(srcW, spec.width);
  const drawH = Math.max(srcH, spec.height);
  src.width = drawW;
  src.height = drawH;
  const sctx = src.getContext("2d", { willReadFrequently: true });
  sctx.fillStyle = "#fff";
  sctx.fillRect(0, 0, drawW, drawH);
  sctx.drawImage(img, 0, 0, drawW, drawH);
  const pixels = sctx.getImageData(0, 0, drawW, drawH).data;

  const { width, height, channels } = spec;
  const rgba = new Float64Array(width * height * 4);
  for (let y = 0; y < height; y++) {
    const y0 = Math.floor((y * drawH) / height), y1 = Math.max(y0 + 1, Math.floor(((y + 1) * drawH) / height));
    for (let x = 0; x < width; x++) {
      const x0 = Math.floor((x * drawW) / width), x1 = Math.max(x0 + 1, Math.floor(((x + 1) * drawW) / width));
      const sum = [0, 0, 0, 0];
      for (let yy = y0; yy < y1; yy++) {
        for (let xx = x0; xx < x1; xx++) {
          const i = (yy * drawW + xx) * 4;
          for (let k = 0; k < 4; k++) sum[k] += pixels[i + k];
        }
      }
      const n = (y1 - y0) * (x1 - x0);
      for (let k = 0; k < 4; k++) rgba[(y * width + x) * 4 + k] = sum[k] / n;
    }
  }

  const float = isFloat(datatype);
  const scale = (v255) => {
    const v = invert ? 255 - v255 : v255;
    return float ? Math.round((v / 255) * 1e4) / 1e4 : Math.round(v);
  };
  const value = (p, k) => {
    const i = p * 4;
    if (channels === 1) return 0.299 * rgba[i] + 0.587 * rgba[i + 1] + 0.114 * rgba[i + 2];
    return rgba[i + k];
  };
  const pixelsCount = width * height;
  const data = [];
  if (spec.layout === "CHW") {
    for (let k = 0; k < channels; k++) for (let p = 0; p < pixelsCount; p++) data.push(scale(value(p, k)));
  } else {
    for (let p = 0; p < pixelsCount; p++) for (let k = 0; k < channels; k++) data.push(scale(value(p, k)));
  }
  const shape = spec.layout === "CHW" ? [channels, height, width] : spec.layout === "HWC" ? [height, width, channels] : [height, width];
  return { data, shape, preview: previewCanvas(rgba, spec, invert) };
}

/** What the model sees: the resized (and maybe inverted, greyed) image. */
function previewCanvas(rgba, { width, height, channels }, invert) {
  const canvas = document.createElement("canvas");
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext("2d");
  const out = ctx.createImageData(width, height);
  for (let p = 0; p < width * height; p++) {
    const i = p * 4;
    const grey = 0.299 * rgba[i] + 0.587 * rgba[i + 1] + 0.114 * rgba[i + 2];
    for (let k = 0; k < 3; k++) {
      const v = channels === 1 ? grey : rgba[i + k];
      out.data[i + k] = invert ? 255 - v : v;
    }
    out.data[i + 3] = 255;
  }
  ctx.putImageData(out, 0, 0);
  return canvas;
}
