// A small time-series line chart on a <canvas>: a few series over a sliding time
// window, y from 0 to a round maximum, gaps where a value is null. Colours come from
// the CSS variables --chart-1.. so the light and dark themes both apply.
// The canvas gets data-points (points drawn, the longest series) and data-nonzero
// (points above zero), for people and tests that want numbers rather than pixels.

import { h } from "./dom.js";

const PAD = { left: 56, right: 12, top: 10, bottom: 22 };

/** A legend for series [{label, color: 1..n}]. */
export function legend(series) {
  return h("ul", { class: "legend" }, series.map((s) =>
    h("li", {}, h("span", { class: `swatch swatch-${s.color}`, "aria-hidden": "true" }), s.label)));
}

/**
 * Draw `series` ([{label, color, points: [[timeMs, value|null], ...]}]) for the
 * window [end - windowMs, end]; `format(v)` writes the y-axis labels.
 */
export function drawLineChart(canvas, series, { end, windowMs, format = String }) {
  const css = getComputedStyle(canvas);
  const width = canvas.clientWidth || 300;
  const height = canvas.clientHeight || 160;
  const ratio = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * ratio) || canvas.height !== Math.round(height * ratio)) {
    canvas.width = Math.round(width * ratio);
    canvas.height = Math.round(height * ratio);
  }
  const ctx = canvas.getContext("2d");
  ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
  ctx.clearRect(0, 0, width, height);
  const font = `11px ${css.fontFamily}`;
  const muted = css.getPropertyValue("--muted").trim() || "#666";
  const grid = css.getPropertyValue("--grid").trim() || "#ddd";

  const start = end - windowMs;
  const visible = series.map((s) => s.points.filter(([t]) => t >= start && t <= end));
  const values = visible.flat().map(([, v]) => v).filter((v) => v !== null && v !== undefined);
  const top = niceCeiling(Math.max(0, ...values) * 1.1);
  const plotW = width - PAD.left - PAD.right;
  const plotH = height - PAD.top - PAD.bottom;
  const x = (t) => PAD.left + ((t - start) / windowMs) * plotW;
  const y = (v) => PAD.top + plotH - (v / top) * plotH;

  // grid and axes
  ctx.font = font;
  ctx.lineWidth = 1;
  ctx.strokeStyle = grid;
  ctx.fillStyle = muted;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (let i = 0; i <= 4; i++) {
    const v = (top * i) / 4;
    const yy = Math.round(y(v)) + 0.5;
    ctx.beginPath();
    ctx.moveTo(PAD.left, yy);
    ctx.lineTo(width - PAD.right, yy);
    ctx.stroke();
    ctx.fillText(format(v), PAD.left - 6, yy);
  }
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  const seconds = windowMs / 1000;
  const step = seconds > 90 ? 30 : 15;
  for (let s = 0; s <= seconds; s += step) {
    const label = s === 0 ? "now" : `-${s}s`;
    const xx = x(end - s * 1000);
    ctx.fillText(label, Math.min(Math.max(xx, PAD.left + 12), width - PAD.right - 12), height - PAD.bottom + 6);
  }

  // lines
  let drawn = 0;
  let nonzero = 0;
  series.forEach((s, i) => {
    const pts = visible[i];
    ctx.strokeStyle = css.getPropertyValue(`--chart-${s.color}`).trim() || "#36c";
    ctx.fillStyle = ctx.strokeStyle;
    ctx.lineWidth = 1.75;
    ctx.lineJoin = "round";
    ctx.beginPath();
    let open = false;
    let count = 0;
    let last = null;
    for (const [t, v] of pts) {
      if (v === null || v === undefined) {
        open = false;
        continue;
      }
      count++;
      if (v > 0) nonzero++;
      if (open) ctx.lineTo(x(t), y(v));
      else ctx.moveTo(x(t), y(v));
      open = true;
      last = [t, v];
    }
    ctx.stroke();
    if (last) {
      ctx.beginPath();
      ctx.arc(x(last[0]), y(last[1]), 2.5, 0, Math.PI * 2);
      ctx.fill();
    }
    drawn = Math.max(drawn, count);
  });
  if (!values.length) {
    ctx.fillStyle = muted;
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    ctx.fillText("no requests yet", PAD.left + plotW / 2, PAD.top + plotH / 2);
  }
  canvas.dataset.points = String(drawn);
  canvas.dataset.nonzero = String(nonzero);
  canvas.dataset.max = String(values.length ? Math.max(...values) : 0);
}

/** 1, 2, 2.5 or 5 times a power of ten, at least `v` (1 for nothing). */
export function niceCeiling(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
