// An ACP client built on the official TypeScript SDK's client side, driving an agent
// through the steps of a scenario and printing one JSON line per step.
//
//   node client.mjs SDK_DIR SCENARIO.json -- AGENT_COMMAND ARGS...
//
// SDK_DIR holds node_modules/@agentclientprotocol/sdk. A scenario is a JSON array of steps:
//   {"op": "initialize", "fs": true}
//   {"op": "new", "cwd": "/abs"}                       (the session becomes the current one)
//   {"op": "load", "session": "ID" | null, "cwd": "/abs"}  (null: the current session)
//   {"op": "prompt", "text": "...", "permission": "allow_once" | "allow_always" |
//        "reject_once" | "reject_always" | "cancelled", "cancelAfterMs": 300}
//   {"op": "mode", "mode": "read-only"}
//   {"op": "call", "method": "_x/y", "params": {}}     (an extension request)
// A step may carry "buffers": {"/abs/path": "text"}: from then on the client's
// fs/read_text_file answers those paths with that text (an unsaved editor buffer) and
// others from disk; fs/write_text_file only records what it was given.
// Each printed line: {"op", "result" | "error", "updates", "permissions", "reads",
// "writes", "sdkErrors", "cancelToStopMs"}.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkDir, scenarioFile, dashes, command, ...args] = process.argv.slice(2);
if (dashes !== "--" || !command) {
  console.error("usage: client.mjs SDK_DIR SCENARIO.json -- AGENT ARGS...");
  process.exit(2);
}
const acp = await import(
  pathToFileURL(join(sdkDir, "node_modules/@agentclientprotocol/sdk/dist/acp.js")).href
);
const steps = JSON.parse(readFileSync(scenarioFile, "utf8"));

// What the SDK rejects as not matching the schema it logs and drops: keep it.
const sdkErrors = [];
const logError = console.error;
console.error = (...parts) => {
  sdkErrors.push(parts.map((p) => (typeof p === "string" ? p : JSON.stringify(p))).join(" "));
  logError(...parts);
};

const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
let step = null;
const buffers = {};
let cancelling = false;
const fresh = () => ({ updates: [], permissions: [], reads: [], writes: [] });
let seen = fresh();
const client = {
  async requestPermission(params) {
    seen.permissions.push(params);
    const wanted = cancelling ? "cancelled" : (step?.permission ?? "reject_once");
    if (wanted === "cancelled") return { outcome: { outcome: "cancelled" } };
    const option = params.options.find((o) => o.kind === wanted);
    return option
      ? { outcome: { outcome: "selected", optionId: option.optionId } }
      : { outcome: { outcome: "cancelled" } };
  },
  async sessionUpdate(params) {
    seen.updates.push(params.update);
  },
  async readTextFile(params) {
    seen.reads.push(params);
    return { content: params.path in buffers ? buffers[params.path] : readFileSync(params.path, "utf8") };
  },
  async writeTextFile(params) {
    seen.writes.push(params);
    return {};
  },
};
const conn = new acp.ClientSideConnection(
  () => client,
  acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)),
);

let current = null;
for (step of steps) {
  seen = fresh();
  sdkErrors.length = 0;
  cancelling = false;
  const out = { op: step.op };
  Object.assign(buffers, step.buffers ?? {});
  try {
    switch (step.op) {
      case "initialize":
        out.result = await conn.initialize({
          protocolVersion: acp.PROTOCOL_VERSION,
          clientCapabilities: { fs: { readTextFile: !!step.fs, writeTextFile: !!step.fs }, terminal: false },
          clientInfo: { name: "aintern-test-client", version: "0.0.0" },
        });
        break;
      case "new":
        out.result = await conn.newSession({ cwd: step.cwd, mcpServers: step.mcpServers ?? [] });
        current = out.result.sessionId;
        break;
      case "load":
        out.result = await conn.loadSession({ sessionId: step.session ?? current, cwd: step.cwd, mcpServers: [] });
        current = step.session ?? current;
        break;
      case "mode":
        out.result = await conn.setSessionMode({ sessionId: current, modeId: step.mode });
        break;
      case "call":
        out.result = await conn.extMethod(step.method, step.params ?? {});
        break;
      case "prompt": {
        const started = Date.now();
        let cancelledAt = null;
        const prompt = conn.prompt({ sessionId: current, prompt: step.blocks ?? [{ type: "text", text: step.text }] });
        if (step.cancelAfterMs !== undefined) {
          setTimeout(() => {
            cancelling = true;
            cancelledAt = Date.now();
            conn.cancel({ sessionId: current });
          }, step.cancelAfterMs);
        }
        out.result = await prompt;
        out.elapsedMs = Date.now() - started;
        if (cancelledAt !== null) out.cancelToStopMs = Date.now() - cancelledAt;
        break;
      }
      default:
        throw new Error(`unknown step ${step.op}`);
    }
  } catch (e) {
    out.error = e && typeof e === "object" ? { code: e.code, message: e.message, data: e.data } : String(e);
  }
  // Updates sent before the response are delivered before it; let the handlers run.
  await new Promise((r) => setTimeout(r, 50));
  Object.assign(out, seen, { sdkErrors: [...sdkErrors] });
  process.stdout.write(JSON.stringify(out) + "\n");
}
child.stdin.end();
child.kill();
process.exit(0);
