#!/usr/bin/env node
// The installed `grpo` command: runs the compiled CLI (npm run build, or `prepare` at install, makes dist/).
import('../dist/cli/bin.js').catch((error) => {
  process.stderr.write(`grpo: ${error?.message ?? error}\n`);
  process.exitCode = 1;
});
