// Every request the dashboard makes goes through here: the server's own API on the
// same origin, with the headers the user entered in Access settings (a server started
// with --http-restricted-api asks for them). Errors become ApiError with the server's text.

const V2_ROOT = new URL("../", import.meta.url); // /dashboard/api.js -> / (or an ASGI mount)
const OWN_ROOT = new URL("./api/", import.meta.url); // /dashboard/api/
const STORAGE_KEY = "naiad.dashboard.headers";

export class ApiError extends Error {
  constructor(status, message, path) {
    super(message);
    this.name = "ApiError";
    this.status = status; // 0: no answer (server down, network)
    this.path = path;
  }

  /** The header a 403 asks for (Triton: "This API is restricted, expecting header 'x'"). */
  get header() {
    const m = /expecting header '([^']+)'/.exec(this.message);
    return m ? m[1] : null;
  }
}

/** The access headers: [[name, value], ...], kept for this browser tab only. */
export function accessHeaders() {
  try {
    const stored = JSON.parse(sessionStorage.getItem(STORAGE_KEY) || "[]");
    return Array.isArray(stored) ? stored.filter((p) => Array.isArray(p) && p[0]) : [];
  } catch {
    return [];
  }
}

export function setAccessHeaders(pairs) {
  const clean = pairs.filter(([name]) => name.trim()).map(([n, v]) => [n.trim(), v]);
  if (clean.length) sessionStorage.setItem(STORAGE_KEY, JSON.stringify(clean));
  else sessionStorage.removeItem(STORAGE_KEY);
  return clean;
}

function url(path) {
  return path.startsWith("dashboard:") ? new URL(path.slice(10), OWN_ROOT) : new URL(path.replace(/^\//, ""), V2_ROOT);
}

/**
 * fetch() with the access headers; resolves to the Response when it is 2xx and
 * rejects with ApiError otherwise (or when no answer came).
 */
export async function raw(method, path, { body, signal } = {}) {
  const headers = new Headers(accessHeaders());
  if (body !== undefined) headers.set("Content-Type", "application/json");
  let response;
  try {
    response = await fetch(url(path), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      cache: "no-store",
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, `No answer from the server at ${location.host} (${err.message}). Is it running?`, path);
  }
  if (response.ok) return response;
  throw new ApiError(response.status, await errorText(response), path);
}

async function errorText(response) {
  const text = await response.text().catch(() => "");
  try {
    const doc = JSON.parse(text);
    if (doc && typeof doc.error === "string") return doc.error;
  } catch {
    // not JSON: the text itself, below
  }
  return text.trim() || `${response.status} ${response.statusText}`;
}

export async function getJSON(path, options) {
  return parseJSON(await (await raw("GET", path, options)).text());
}

export async function postJSON(path, body = {}, options = {}) {
  const response = await raw("POST", path, { ...options, body });
  const text = await response.text();
  return text ? parseJSON(text) : {};
}

// Triton writes non-finite output values as bare NaN, Infinity and -Infinity, which
// JSON.parse refuses: they are read as those numbers, and written back the same way.
const MARK = "\u0000naiad:"; // inside a JSON string, where no real value has it
const STRING_OR_NON_FINITE = /"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)/g;

/** JSON.parse that also reads the non-finite numbers Triton writes. */
export function parseJSON(text) {
  try {
    return JSON.parse(text);
  } catch (err) {
    if (!/NaN|Infinity/.test(text)) throw err;
  }
  const marked = text.replace(STRING_OR_NON_FINITE, (match, word) => (word ? `"\\u0000naiad:${word}"` : match));
  return JSON.parse(marked, (_key, value) => (typeof value === "string" && value.startsWith(MARK) ? Number(value.slice(MARK.length)) : value));
}

/** JSON.stringify that writes NaN and infinities as Triton does (not as null). */
export function jsonText(value, space) {
  const text = JSON.stringify(value, (_key, v) => (typeof v === "number" && !Number.isFinite(v) ? MARK + v : v), space);
  return text.replace(/"\\u0000naiad:(NaN|-?Infinity)"/g, "$1");
}

export async function getText(path, options) {
  return (await raw("GET", path, options)).text();
}

/** "/v2/models/<name>" or ".../versions/<v>" with both parts escaped. */
export function modelPath(name, version) {
  const base = `/v2/models/${encodeURIComponent(name)}`;
  return version ? `${base}/versions/${encodeURIComponent(version)}` : base;
}

export function dashboardModelPath(name, version) {
  const base = `dashboard:models/${encodeURIComponent(name)}`;
  return version ? `${base}/versions/${encodeURIComponent(version)}` : base;
}
