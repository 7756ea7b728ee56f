// Access settings: header name/value pairs sent with every request, for a server
// started with --http-restricted-api. Kept in this tab's sessionStorage only (gone
// when the tab closes), and sent only to this server (every request is same-origin).

import { accessHeaders, getJSON, setAccessHeaders } from "../api.js";
import { h, replace, table } from "../dom.js";

export async function render(main, _params, ctx) {
  document.title = "Access · naiad";
  const rows = h("div", { class: "header-rows", id: "access-rows" });
  const status = h("p", { id: "access-status", class: "access-status", role: "status", "aria-live": "polite" });
  const addRow = (name = "", value = "") => {
    const n = rows.children.length;
    const nameInput = h("input", { type: "text", class: "header-name", id: `header-name-${n}`, value: name, autocomplete: "off", spellcheck: false, placeholder: "admin-key" });
    const valueInput = h("input", { type: "password", class: "header-value", id: `header-value-${n}`, value, autocomplete: "off", spellcheck: false });
    const row = h("div", { class: "header-row" },
      h("label", { for: nameInput.id }, "Header", nameInput),
      h("label", { for: valueInput.id }, "Value", valueInput),
      h("button", { type: "button", class: "button small secondary", "aria-label": `Remove header row ${n + 1}`, on: { click: () => row.remove() } }, "Remove"));
    rows.append(row);
    return nameInput;
  };
  const saved = accessHeaders();
  if (saved.length) saved.forEach(([n, v]) => addRow(n, v));
  else addRow();
  const show = h("input", { type: "checkbox", id: "access-show", on: { change: () => {
    for (const input of rows.querySelectorAll(".header-value")) input.type = show.checked ? "text" : "password";
  } } });

  const form = h("form", { id: "access-form", class: "access-form" },
    rows,
    h("label", { class: "check" }, show, " Show values"),
    h("div", { class: "button-row" },
      h("button", { type: "button", class: "button secondary", id: "access-add", on: { click: () => addRow().focus() } }, "Add header"),
      h("button", { type: "submit", class: "button primary", id: "access-save" }, "Save"),
      h("button", { type: "button", class: "button secondary", id: "access-clear", on: { click: () => {
        setAccessHeaders([]);
        document.getElementById("topbar-status").textContent = "";
        rows.replaceChildren();
        addRow();
        status.textContent = "Cleared: no headers are sent.";
      } } }, "Clear")),
    status);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const pairs = [...rows.querySelectorAll(".header-row")].map((r) => [r.querySelector(".header-name").value, r.querySelector(".header-value").value]);
    const bad = pairs.find(([n]) => n.trim() && !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(n.trim()));
    if (bad) {
      status.textContent = `"${bad[0]}" is not a valid header name.`;
      return;
    }
    const kept = setAccessHeaders(pairs);
    document.getElementById("topbar-status").textContent = kept.length ? `sending ${kept.map(([n]) => n).join(", ")}` : "";
    status.textContent = kept.length ? `Saved: ${kept.map(([n]) => n).join(", ")} sent with every request from this tab.` : "Saved: no headers are sent.";
  });

  const needs = h("div", { id: "access-needs" });
  replace(main,
    h("div", { class: "page-head" }, h("h1", {}, "Access")),
    h("section", { class: "card", "aria-labelledby": "access-title" },
      h("h2", { id: "access-title" }, "Request headers"),
      h("p", {}, "A server started with ", h("code", {}, "--http-restricted-api"), " answers 403 to some APIs unless a request carries a header with the right value. Enter it here: the dashboard sends these headers with every request it makes to this server. They are kept for this browser tab only (session storage)."),
      form),
    h("section", { class: "card", "aria-labelledby": "needs-title" }, h("h2", { id: "needs-title" }, "What this server restricts"), needs));

  try {
    const info = await getJSON("dashboard:server", { signal: ctx.signal });
    const pairs = Object.entries(info.restricted || {});
    replace(needs, pairs.length
      ? table({ className: "data compact", caption: "Restricted API categories", head: ["API category", "Header"], rows: pairs.map(([cat, header]) => h("tr", {}, h("td", {}, cat), h("td", {}, h("code", {}, header)))) })
      : h("p", {}, "Nothing: every API is open (or this server was not told to restrict any)."));
  } catch (err) {
    if (err.name === "AbortError") throw err;
    replace(needs, h("p", { class: "inline-error" }, `Cannot tell (${err.message}).`));
  }
}
