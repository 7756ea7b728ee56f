// Reading a model's config (JSON, proto field names) into what the pages show:
// batching, instances, decoupled, labels. Shared by the Models and Model pages.

export function isDecoupled(config) {
  return Boolean(config && config.model_transaction_policy && config.model_transaction_policy.decoupled);
}

export function platformOf(config, metadata) {
  const parts = [];
  if (config && config.platform) parts.push(config.platform);
  if (config && config.backend && config.backend !== config.platform) parts.push(config.backend);
  if (!parts.length && metadata && metadata.platform) parts.push(metadata.platform);
  return parts.join(" / ");
}

/** "2 × CPU, 1 × GPU [0]" */
export function instancesOf(config) {
  const groups = (config && config.instance_group) || [];
  if (!groups.length) return "";
  return groups.map((g) => {
    const kind = String(g.kind || "KIND_AUTO").replace(/^KIND_/, "");
    const gpus = g.gpus && g.gpus.length ? ` [${g.gpus.join(",")}]` : "";
    return `${g.count || 1} × ${kind}${gpus}`;
  }).join(", ");
}

/** Batching as short lines: max batch size, dynamic batching, sequence batching. */
export function batchingOf(config) {
  if (!config) return [];
  const lines = [];
  const max = Number(config.max_batch_size || 0);
  lines.push(max > 0 ? `max batch ${max}` : "no batching");
  const dyn = config.dynamic_batching;
  if (dyn) {
    const preferred = dyn.preferred_batch_size && dyn.preferred_batch_size.length ? `preferred ${dyn.preferred_batch_size.join(", ")}` : "";
    const delay = `delay ${dyn.max_queue_delay_microseconds || 0} µs`;
    lines.push(["dynamic", preferred, delay].filter(Boolean).join(" · "));
  }
  const seq = config.sequence_batching;
  if (seq) {
    const strategy = seq.oldest ? "oldest" : "direct";
    const idle = seq.max_sequence_idle_microseconds ? ` · idle ${seq.max_sequence_idle_microseconds} µs` : "";
    lines.push(`sequence (${strategy})${idle}`);
  }
  return lines;
}

/** The config's input entry by name (dims without the batch dimension, format). */
export function configInput(config, name) {
  return ((config && config.input) || []).find((i) => i.name === name) || null;
}

export function configOutput(config, name) {
  return ((config && config.output) || []).find((o) => o.name === name) || null;
}

/** A traffic split (parameters naiad.traffic_split / naiad.traffic_sticky) as
 * "version 1: 90% · version 2: 10%", and what keeps a user on one; "" without one. */
export function trafficSplitOf(config) {
  const params = (config && config.parameters) || {};
  const text = params["naiad.traffic_split"] ? String(params["naiad.traffic_split"].string_value || "") : "";
  const weights = text.split(",").map((part) => part.split(":").map((x) => Number(x.trim()))).filter(([v, w]) => Number.isInteger(v) && w > 0);
  const total = weights.reduce((acc, [, w]) => acc + w, 0);
  if (!total) return "";
  const shares = weights.map(([v, w]) => `version ${v}: ${Number((100 * w / total).toPrecision(3))}%`).join(" · ");
  const sticky = params["naiad.traffic_sticky"] ? String(params["naiad.traffic_sticky"].string_value || "") : "";
  return sticky ? `${shares} (sticky by parameter '${sticky}')` : shares;
}
