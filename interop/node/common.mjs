// Shared by the Node drivers: read check.py's config, print events as JSON lines.
import { readFileSync } from "node:fs";

export const config = JSON.parse(readFileSync(process.argv.at(-1), "utf8"));

// Each check is bounded by check.py (30 s); this makes a hung step a
// reported failure before that.
export const STEP_TIMEOUT_MS = 20000;

export function emit(fields) {
  process.stdout.write(JSON.stringify(fields) + "\n");
}

// The installed version, read from node_modules (v2 packages do not export
// their package.json).
export function packageVersion(name) {
  const manifest = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(manifest, "utf8")).version;
}

export function describe(err) {
  return `${err?.name ?? "Error"}: ${err?.message ?? String(err)}`;
}

// initialize → tools/list → bad call → good call → close, with the client's
// own calls passed in; every step's outcome is printed as one event.
export async function session({ initialize, listTools, callTool, close }) {
  let step = "initialize";
  try {
    const init = await initialize();
    emit({ event: "initialized", ...init });
    step = "tools/list";
    emit({ event: "tools", tools: await listTools() });
    step = "bad call";
    try {
      emit({ event: "bad_call", result: await callTool(config.tool, config.bad_arguments) });
    } catch (err) {
      emit({ event: "bad_call", error: describe(err) });
    }
    step = "good call";
    try {
      emit({ event: "good_call", result: await callTool(config.tool, config.good_arguments) });
    } catch (err) {
      emit({ event: "good_call", error: describe(err) });
    }
    step = "close";
    const at = Date.now() / 1000;
    await close();
    emit({ event: "closed", at, returned_at: Date.now() / 1000 });
  } catch (err) {
    emit({ event: "fatal", step, error: describe(err) });
    process.exitCode = 1;
    try {
      await close();
    } catch {
      // already failing
    }
  }
}
