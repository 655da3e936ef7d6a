// Driver for the official TypeScript SDK v1: @modelcontextprotocol/sdk, Client + StdioClientTransport.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { config, emit, packageVersion, session, STEP_TIMEOUT_MS } from "./common.mjs";

emit({ event: "client", name: "@modelcontextprotocol/sdk", version: packageVersion("@modelcontextprotocol/sdk") });

const transport = new StdioClientTransport({
  command: config.server.command,
  args: config.server.args,
  // Merged over the SDK's default environment (HOME LOGNAME PATH SHELL TERM USER).
  env: config.env,
  stderr: "inherit",
});
// v1 has no getter for the negotiated revision; it hands it to the
// transport's optional setProtocolVersion hook after initialize.
let negotiated;
transport.setProtocolVersion = (version) => {
  negotiated = version;
};
const client = new Client({ name: "portcullis-interop", version: "0.0.0" });
const options = { timeout: STEP_TIMEOUT_MS };

await session({
  initialize: async () => {
    await client.connect(transport, options);
    return { protocolVersion: negotiated, serverInfo: client.getServerVersion() };
  },
  listTools: async () => (await client.listTools(undefined, options)).tools,
  callTool: (name, args) => client.callTool({ name, arguments: args }, undefined, options),
  close: () => client.close(),
});
