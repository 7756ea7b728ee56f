// The page's one place for errors: a banner (role="alert") under the header that
// shows the server's message, with a pointer to Access settings when the server
// answered 403. Nothing goes to the console only.

import { h, replace } from "./dom.js";

const banner = () => document.getElementById("banner");

/** An error as nodes: the message, and what to do about it when we know. */
export function describe(err, context = "") {
  const message = err && err.message ? err.message : String(err);
  const parts = [h("strong", { class: "error-context" }, context ? `${context}: ` : "Error: "), h("span", { class: "error-message" }, message)];
  if (err && err.status === 403) {
    const header = err.header ? `the header '${err.header}'` : "the header the server expects";
    parts.push(" ", h("span", { class: "error-hint" }, "This API is restricted: enter ", header, " in ", h("a", { href: "#/settings" }, "Access settings"), "."));
  } else if (err && err.status === 0) {
    parts.push(" ", h("span", { class: "error-hint" }, "Is the server running? The page asks again when you navigate or reload (the Server page every second)."));
  }
  return parts;
}

/** Show an error in the banner (replacing the one shown). */
export function showError(err, context = "") {
  if (err && err.name === "AbortError") return;
  const el = banner();
  if (!el) return;
  const close = h("button", { type: "button", class: "banner-close", "aria-label": "Dismiss", on: { click: clearError } }, "×");
  replace(el, h("div", { class: "banner-error", dataset: { status: String(err && err.status !== undefined ? err.status : "") } }, h("p", {}, describe(err, context)), close));
  el.hidden = false;
}

export function clearError() {
  const el = banner();
  if (el) {
    el.replaceChildren();
    el.hidden = true;
  }
}

/** An inline error for one section of a page (the banner says it too). */
export function inlineError(err, context = "") {
  showError(err, context);
  return h("p", { class: "inline-error", role: "note" }, describe(err, context));
}
