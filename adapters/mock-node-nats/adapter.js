// Answers the nats-conformance adapter protocol (docs/adapter-protocol.md, version 2) with the npm
// test mock @sensorfactdev/mock-node-nats, which stands in for a NATS client in unit tests and
// delivers a published message to the subscriptions whose subject matches. `match` asks exactly
// that, through its public API: subscribe(pattern, callback), publish(subject), unsubscribe(sid).
"use strict";
const readline = require("readline");
const NATS = require("@sensorfactdev/mock-node-nats");
const { version } = require("@sensorfactdev/mock-node-nats/package.json");

const client = NATS.connect();

function answer(request) {
  const id = request.id === undefined ? null : request.id;
  if (request.op === "hello") {
    return {
      id, protocol: 2, implementation: `@sensorfactdev/mock-node-nats ${version}`,
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

function line(text) {
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
  write(answer(request));
}

readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", line);
