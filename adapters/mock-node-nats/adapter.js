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

function line(text) {
  if (!text.trim()) return;
  let request;
  try {
    request = JSON.parse(text);
  } catch (error) {
    process.stdout.write(JSON.stringify({ id: null, error: "bad-request", detail: "line is not JSON" }) + "\n");
    return;
  }
  if (request === null || typeof request !== "object" || Array.isArray(request)) {
    process.stdout.write(JSON.stringify({ id: null, error: "bad-request", detail: "not an object" }) + "\n");
    return;
  }
  process.stdout.write(JSON.stringify(answer(request)) + "\n");
}

readline.createInterface({ input: process.stdin, crlfDelay: Infinity }).on("line", line);
