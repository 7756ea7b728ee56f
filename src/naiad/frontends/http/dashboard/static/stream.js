// Server-sent events from POST .../generate_stream, read with fetch() (EventSource
// cannot POST or send headers): each `data: {...}` event is handed to onEvent as it
// arrives; an event {"error": "..."} is the server reporting a failure mid-stream.

import { parseJSON, raw } from "./api.js";

export async function generateStream(path, body, { signal, onEvent, onError }) {
  const response = await raw("POST", path, { body, signal });
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let count = 0;
  const flush = (chunk) => {
    const lines = chunk.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).replace(/^ /, ""));
    if (!lines.length) return;
    const event = parseJSON(lines.join("\n"));
    if (event && typeof event.error === "string" && Object.keys(event).length === 1) onError(event.error);
    else onEvent(event, count++);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true }).replace(/\r\n/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      flush(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
    }
  }
  buffer += decoder.decode();
  if (buffer.trim()) flush(buffer);
  return count;
}
