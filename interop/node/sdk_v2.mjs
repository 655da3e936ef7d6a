// Driver for the official TypeScript SDK v2: @modelcontextprotocol/client, Client + StdioClientTransport.
//
//     node sdk_v2.mjs CONFIG          # default negotiation: legacy `initialize`
//     node sdk_v2.mjs --auto CONFIG   # versionNegotiation "auto": server/discover first
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { config, emit, packageVersion, session, STEP_TIMEOUT_MS } from "./common.mjs";

emit({ event: "client", name: "@modelcontextprotocol/client", version: packageVersion("@modelcontextprotocol/client") });

const transport = new StdioClientTransport({
  command: config.server.command,
  args: config.server.args,
  // Merged over the SDK's default environment (HOME LOGNAME PATH SHELL TERM USER).
  env: config.env,
  stderr: "inherit",
});
const auto = process.argv.includes("--auto");
const client = new Client(
  { name: "portcullis-interop", version: "0.0.0" },
  auto ? { versionNegotiation: { mode: "auto" } } : undefined,
);
const options = { timeout: STEP_TIMEOUT_MS };

await session({
  initialize: async () => {
    await client.connect(transport, options);
    return {
      protocolVersion: client.getNegotiatedProtocolVersion(),
      era: client.getProtocolEra(),
      serverInfo: client.getServerVersion(),
    };
  },
  listTools: async () => (await client.listTools(undefined, options)).tools,
  callTool: (name, args) => client.callTool({ name, arguments: args }, options),
  close: () => client.close(),
});
