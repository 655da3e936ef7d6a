// The official TypeScript SDK (v1 Client + StdioClientTransport) through
// `portcullis wrap`: initialize, list the tools, call one, abort a slow
// call (the SDK sends notifications/cancelled), call again. Prints one JSON
// object with what it saw; interop/wrap/check.py judges it.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const config = JSON.parse(process.argv[2]);
const textOf = (result) => ({
  isError: Boolean(result.isError),
  text: (result.content && result.content[0] && result.content[0].text) || "",
});
const out = { client: "typescript" };
const transport = new StdioClientTransport({
  command: config.command,
  args: config.args,
  env: { PATH: process.env.PATH, HOME: process.env.HOME ?? "/", ...(config.env ?? {}) },
  stderr: "inherit",
});
const client = new Client({ name: "wrap-interop", version: "1.0.0" });
await client.connect(transport);
out.tools = (await client.listTools()).tools.map((t) => t.name);
out.call = textOf(await client.callTool({ name: config.tool, arguments: config.arguments }));
if (config.slow_tool) {
  const started = Date.now();
  const abort = new AbortController();
  setTimeout(() => abort.abort("interop: cancelled on purpose"), 1000);
  try {
    await client.callTool({ name: config.slow_tool, arguments: config.slow_arguments }, undefined, {
      signal: abort.signal,
    });
    out.cancel = "answered";
  } catch (err) {
    out.cancel = err?.name ?? String(err);
  }
  out.cancel_s = (Date.now() - started) / 1000;
  out.after_cancel = textOf(await client.callTool({ name: config.tool, arguments: config.arguments }));
}
await client.close();
console.log(JSON.stringify(out));
