// Driver for the MCP Inspector CLI (@modelcontextprotocol/inspector --cli): one
// process, and so one gateway session, per method, as a user runs it.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { config, emit, packageVersion, session, STEP_TIMEOUT_MS } from "./common.mjs";

const launcher = fileURLToPath(new URL("./node_modules/.bin/mcp-inspector", import.meta.url));

emit({ event: "client", name: "@modelcontextprotocol/inspector", version: packageVersion("@modelcontextprotocol/inspector") });

// Inspector options first, then `--` and the server command: the watcher's
// own `--` would otherwise end the Inspector's option parsing early.
function inspector(methodArgs) {
  const env = Object.entries(config.env).flatMap(([key, value]) => ["-e", `${key}=${value}`]);
  const run = spawnSync(
    launcher,
    ["--cli", ...env, ...methodArgs, "--format", "json", "--", config.server.command, ...config.server.args],
    {
      encoding: "utf8",
      timeout: STEP_TIMEOUT_MS,
      stdio: ["ignore", "pipe", "inherit"],
      env: {
        ...process.env,
        // Keep the Inspector's catalog and client config out of $HOME.
        MCP_CATALOG_PATH: join(config.work_dir, "inspector-catalog.json"),
        MCP_CLIENT_CONFIG_PATH: join(config.work_dir, "inspector-client.json"),
      },
    },
  );
  if (run.error) throw run.error;
  let output;
  try {
    output = JSON.parse(run.stdout);
  } catch {
    throw new Error(`exit ${run.status}, stdout not JSON: ${JSON.stringify(run.stdout)}`);
  }
  if (!output.result) throw new Error(`exit ${run.status}: ${JSON.stringify(output.error ?? output)}`);
  // Exit 5 is the CLI's "the tool returned isError: true"; the result is still printed.
  if (run.status !== 0 && !(run.status === 5 && output.result.isError === true)) {
    throw new Error(`exit ${run.status} with result ${JSON.stringify(output.result)}`);
  }
  return output.result;
}

function toolArgs(args) {
  return Object.entries(args).flatMap(([key, value]) => ["--tool-arg", `${key}=${value}`]);
}

let tools;
await session({
  // Each method's process initializes its own session; the revision is
  // read off the wire by the watcher, since the CLI does not print it.
  initialize: async () => {
    tools = inspector(["--method", "tools/list"]).tools;
    return {};
  },
  listTools: async () => tools,
  callTool: async (name, args) => inspector(["--method", "tools/call", "--tool-name", name, ...toolArgs(args)]),
  close: async () => {},
});
