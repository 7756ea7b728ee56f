// Building DOM nodes without HTML strings: text is always set as text, so nothing a
// model or a server sends can become markup (and the CSP forbids inline styles anyway).

/**
 * h("a", {href: "#/models", class: "nav"}, "Models") -> <a href="#/models" class="nav">Models</a>
 * Props: "class", "text", "dataset" ({key: value}), "on" ({event: handler}), properties
 * known to the element (value, checked, disabled, ...) and otherwise attributes.
 * Children: nodes, strings, numbers, arrays of them; null/undefined/false are skipped.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "text") el.textContent = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "on") for (const [ev, fn] of Object.entries(value)) el.addEventListener(ev, fn);
    else if (key in el && typeof value !== "string") el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Replace every child of `el` with `children`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A table inside a box that scrolls sideways, so a wide table never widens the page. */
export function table({head = [], rows = [], caption, id, className = "" }) {
  const thead = head.length ? h("thead", {}, h("tr", {}, head.map((c) => h("th", { scope: "col" }, c)))) : null;
  const body = h("tbody", {}, rows);
  const t = h("table", { id, class: className }, caption ? h("caption", {}, caption) : null, thead, body);
  return h("div", { class: "table-wrap", tabindex: "0", role: "region", "aria-label": caption || "table" }, t);
}

/** A description list from [[term, value], ...] (value: node or text). */
export function facts(pairs, props = {}) {
  return h("dl", { class: "facts", ...props }, pairs.map(([term, value, id]) => [
    h("dt", {}, term),
    h("dd", { id }, value === undefined || value === null || value === "" ? "—" : value),
  ]));
}

export function formatDuration(seconds) {
  const s = Math.floor(seconds);
  const d = Math.floor(s / 86400), hh = Math.floor((s % 86400) / 3600);
  const mm = Math.floor((s % 3600) / 60), ss = s % 60;
  if (d) return `${d}d ${hh}h ${mm}m`;
  if (hh) return `${hh}h ${mm}m ${ss}s`;
  if (mm) return `${mm}m ${ss}s`;
  return `${ss}s`;
}

/** Numbers as people read them: integers whole, others to 4 significant digits. */
export function formatNumber(v, digits = 4) {
  if (v === null || v === undefined || Number.isNaN(v)) return "—";
  if (typeof v !== "number") return String(v);
  if (Number.isInteger(v)) return v.toLocaleString("en-US").replace(/,/g, "\u2009");
  return String(Number(v.toPrecision(digits)));
}

/** A size in bytes as "512 B", "37.5 MiB" or "1.25 GiB". */
export function formatBytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
  return `${i ? formatNumber(n, 3) : n} ${units[i]}`;
}

/** A latency in microseconds as "420 µs" or "1.25 ms". */
export function formatLatency(us) {
  if (us === null || us === undefined) return "—";
  if (us >= 1000) return `${formatNumber(us / 1000, 3)} ms`;
  return `${formatNumber(us, 3)} µs`;
}
