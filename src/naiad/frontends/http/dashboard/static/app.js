// The single-page app: hash routes to pages, one page at a time in <main>.
//   #/                          server (live charts)
//   #/models                    every model and version, load / unload / reload
//   #/models/<name>[/<version>] one model: metadata, config, statistics, try it
//   #/settings                  access headers for restricted APIs
// A page is a module with render(main, params, ctx); ctx.signal aborts when the user
// leaves the page, and ctx.onLeave(fn) registers clean-up (timers, streams).

import { accessHeaders } from "./api.js";
import { clearError, showError } from "./banner.js";
import { h, replace } from "./dom.js";
import * as serverPage from "./pages/server.js";
import * as modelsPage from "./pages/models.js";
import * as modelPage from "./pages/model.js";
import * as settingsPage from "./pages/settings.js";

const ROUTES = [
  [/^\/?$/, serverPage, "server", () => ({})],
  [/^\/models\/?$/, modelsPage, "models", () => ({})],
  [/^\/models\/([^/]+)(?:\/([^/]+))?\/?$/, modelPage, "models", (m) => ({ name: decodeURIComponent(m[1]), version: m[2] ? decodeURIComponent(m[2]) : "" })],
  [/^\/settings\/?$/, settingsPage, "settings", () => ({})],
];

let current = null; // {controller, leave: [fn]}
let firstRender = true;

function route() {
  const hash = location.hash;
  if (hash && !hash.startsWith("#/")) return; // an in-page anchor (the skip link): no navigation
  const path = hash.slice(1) || "/";
  leave();
  clearError();
  showAccess();
  const main = document.getElementById("main");
  for (const [pattern, page, nav, params] of ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    markNav(nav);
    show(page, main, params(m));
    return;
  }
  markNav("");
  document.title = "Not found · naiad";
  replace(main, h("h1", {}, "Page not found"), h("p", {}, "No page at ", h("code", {}, hash), ". ", h("a", { href: "#/" }, "Go to the Server page"), "."));
}

function show(page, main, params) {
  const controller = new AbortController();
  const leaveFns = [];
  current = { controller, leave: leaveFns };
  const ctx = {
    signal: controller.signal,
    onLeave: (fn) => leaveFns.push(fn),
    get active() {
      return !controller.signal.aborted;
    },
  };
  replace(main, h("p", { class: "loading" }, "Loading…"));
  Promise.resolve()
    .then(() => page.render(main, params, ctx))
    .then(() => focusHeading(main))
    .catch((err) => {
      if (err && err.name === "AbortError") return;
      showError(err, "This page failed");
      if (!main.querySelector("h1")) replace(main, h("h1", {}, "Something went wrong"), h("p", {}, "See the message above."));
    });
}

/** After a navigation (not the first load) focus moves to the new page's heading. */
function focusHeading(main) {
  if (firstRender) {
    firstRender = false;
    return;
  }
  const heading = main.querySelector("h1");
  if (heading && !main.contains(document.activeElement)) {
    heading.tabIndex = -1;
    heading.focus({ preventScroll: false });
  }
}

function leave() {
  if (!current) return;
  current.controller.abort();
  for (const fn of current.leave) {
    try {
      fn();
    } catch (err) {
      showError(err, "Leaving the page");
    }
  }
  current = null;
}

/** The header bar says when access headers are being sent (their names, never values). */
function showAccess() {
  const names = accessHeaders().map(([name]) => name);
  document.getElementById("topbar-status").textContent = names.length ? `sending ${names.join(", ")}` : "";
}

function markNav(active) {
  for (const a of document.querySelectorAll("[data-nav]")) {
    if (a.dataset.nav === active) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

document.getElementById("skip-link").addEventListener("click", (event) => {
  event.preventDefault();
  const main = document.getElementById("main");
  main.focus();
  main.scrollIntoView();
});
window.addEventListener("hashchange", route);
window.addEventListener("unhandledrejection", (event) => showError(event.reason, "Unexpected error"));
window.addEventListener("error", (event) => showError(event.error || event.message, "Unexpected error"));
route();
