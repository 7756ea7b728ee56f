// A confirmation dialog: a native <dialog> opened with showModal(), so the browser
// traps focus and Esc cancels. Focus starts on the confirm button.

import { h, replace } from "./dom.js";

let dialog;

function build() {
  const title = h("h2", { id: "confirm-title" });
  const text = h("p", { id: "confirm-text" });
  const cancel = h("button", { type: "submit", value: "cancel", class: "button secondary", id: "confirm-cancel" }, "Cancel");
  const ok = h("button", { type: "submit", value: "ok", class: "button danger", id: "confirm-ok" }, "Confirm");
  const form = h("form", { method: "dialog" }, title, text, h("div", { class: "dialog-buttons" }, cancel, ok));
  dialog = h("dialog", { id: "confirm-dialog", "aria-labelledby": "confirm-title", "aria-describedby": "confirm-text" }, form);
  document.body.append(dialog);
  return dialog;
}

/** Ask; resolves true when the user pressed the confirm button. */
export function confirmAction({ title, text, confirm = "Confirm", danger = false }) {
  const d = dialog || build();
  replace(d.querySelector("#confirm-title"), title);
  replace(d.querySelector("#confirm-text"), text);
  const ok = d.querySelector("#confirm-ok");
  ok.textContent = confirm;
  ok.className = danger ? "button danger" : "button primary";
  d.returnValue = "";
  return new Promise((resolve) => {
    d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true });
    d.showModal();
    ok.focus();
  });
}
