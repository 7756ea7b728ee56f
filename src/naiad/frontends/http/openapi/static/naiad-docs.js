// naiad's /docs page: Swagger UI over the server's OpenAPI documents. The top bar's
// picker holds the whole server's document and one per model (GET ../openapi.json names
// the models in x-naiad-models); "?model=<name>" opens a model's. Every address is
// relative to this page, so the page works under an ASGI mount point too.
(function () {
  "use strict";
  const major = Number(document.currentScript.dataset.swaggerUiMajor || "0");
  const ALL = "All models";
  const modelDoc = (name) => `../v2/models/${encodeURIComponent(name)}/openapi.json`;

  // Swagger UI before 5 reads OpenAPI 3.0 only; naiad's documents are 3.1 written in the
  // part both share, so the older one is told 3.0.3 (docs/openapi.md).
  function responseInterceptor(res) {
    if (major < 5 && res && typeof res.text === "string" && /openapi\.json(\?|$)/.test(res.url || "")) {
      res.text = res.text.replace(/"openapi"\s*:\s*"3\.1\.\d+"/, '"openapi":"3.0.3"');
    }
    return res;
  }

  function start(models) {
    const wanted = new URLSearchParams(window.location.search).get("model");
    const urls = [{ name: ALL, url: "../openapi.json" }, ...models.map((m) => ({ name: m, url: modelDoc(m) }))];
    window.ui = SwaggerUIBundle({
      urls,
      "urls.primaryName": wanted && models.includes(wanted) ? wanted : ALL,
      dom_id: "#swagger-ui",
      deepLinking: true,
      displayRequestDuration: true,
      presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
      layout: "StandaloneLayout",
      responseInterceptor,
    });
  }

  fetch("../openapi.json", { headers: { Accept: "application/json" } })
    .then((res) => (res.ok ? res.json() : {}))
    .then((doc) => start(Array.isArray(doc["x-naiad-models"]) ? doc["x-naiad-models"] : []))
    .catch(() => start([]));
})();
