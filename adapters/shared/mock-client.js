// The adapter protocol (docs/adapter-protocol.md, version 2) over an npm test mock of a NATS client
// that delivers a published message to the subscriptions whose subject matches: `match` subscribes
// with the pattern, publishes on the subject and unsubscribes. Shared by the mock adapters (their
// adapter.toml's `shared`), each of which connects its own package's client.
"use strict";
const readline = require("readline");

function answer(client, implementation, request) {
  const id = request.id === undefined ? null : request.id;
  if (request.op === "hello") {
    return {
      id, protocol: 2, implementation,
      server_version: null, ops: ["hello", "match"],
      answered_by: { match: "subscribe + publish" },
    };
  }
  if (request.op === "match") {
    if (typeof request.pattern !== "string" || typeof request.subject !== "string") {
      return { id, error: "bad-request", detail: "fields 'pattern' and 'subject' must be strings" };
    }
    let delivered = false;
    let sid = null;
    try {
      sid = client.subscribe(request.pattern, () => { delivered = true; });
      client.publish(request.subject, "");
    } catch (error) {
      return { id, error: "internal-error", detail: String(error).split("\n")[0] };
    } finally {
      if (sid !== null) client.unsubscribe(sid);
    }
    return { id, match: delivered };
  }
  return { id, error: "bad-request", detail: `unknown op ${JSON.stringify(request.op)}` };
}

// One answer line, ASCII only as the protocol says: every other UTF-16 unit as a \uXXXX escape.
function write(value) {
  const text = JSON.stringify(value).replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  process.stdout.write(text + "\n");
}

function line(client, implementation, text) {
  if (!text.trim()) return;
  let request;
  try {
    request = JSON.parse(text);
  } catch (error) {
    write({ id: null, error: "bad-request", detail: "line is not JSON" });
    return;
  }
  if (request === null || typeof request !== "object" || Array.isArray(request)) {
    write({ id: null, error: "bad-request", detail: "not an object" });
    return;
  }
  write(answer(client, implementation, request));
}

// Answers each request line on stdin with `client` (a connected mock), as `implementation` (name and
// version) in its hello.
function serve(client, implementation) {
  readline.createInterface({ input: process.stdin, crlfDelay: Infinity })
    .on("line", (text) => line(client, implementation, text));
}

module.exports = { serve };
