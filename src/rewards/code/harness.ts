/**
 * Test harnesses run inside the sandbox: they load the tests, delete the test file, report a
 * "ready" line, execute the solution, then each test, printing one result line per test that
 * carries a per-run random nonce (read from stdin, never written to disk).
 *
 * Why: a completion that calls `exit(0)` or crashes before the tests cannot pass them (missing
 * result lines count as failures), and printing fake result lines needs the nonce. This defends
 * against common reward hacks, not against code that inspects the harness's own memory.
 */

/** Python harness: `tests.json` holds `{ setup, tests }`; the solution is `solution.py`. */
export const PYTHON_HARNESS = String.raw`
import json, os, sys
nonce = sys.stdin.readline().strip()
report = os.fdopen(os.dup(1), 'w')
with open('tests.json') as handle:
    spec = json.load(handle)
os.remove('tests.json')
with open('solution.py') as handle:
    solution = handle.read()
os.remove('solution.py')
report.write(nonce + ' ready\n'); report.flush()
scope = {'__name__': '__solution__'}
try:
    exec(compile(solution + '\n' + spec['setup'], 'solution.py', 'exec'), scope)
except BaseException as error:
    report.write(nonce + ' load-error ' + type(error).__name__ + '\n'); report.flush()
    sys.exit(0)
for index, test in enumerate(spec['tests']):
    try:
        exec(compile(test, 'test_%d.py' % index, 'exec'), scope)
        report.write(nonce + ' pass %d\n' % index)
    except BaseException as error:
        report.write(nonce + ' fail %d %s\n' % (index, type(error).__name__))
    report.flush()
`;

/** JavaScript harness: same protocol; tests see the solution's globals and `assert` (node:assert). */
export const JAVASCRIPT_HARNESS = String.raw`
const fs = require('node:fs');
const vm = require('node:vm');
const writeSync = fs.writeSync;
const nonce = fs.readFileSync(0, 'utf8').split('\n')[0].trim();
const spec = JSON.parse(fs.readFileSync('tests.json', 'utf8'));
fs.rmSync('tests.json');
const solution = fs.readFileSync('solution.js', 'utf8');
fs.rmSync('solution.js');
writeSync(1, nonce + ' ready\n');
globalThis.assert = require('node:assert');
try {
  vm.runInThisContext(solution + '\n' + spec.setup, { filename: 'solution.js' });
} catch (error) {
  writeSync(1, nonce + ' load-error ' + ((error && error.name) || 'Error') + '\n');
  process.exit(0);
}
spec.tests.forEach((test, index) => {
  try {
    vm.runInThisContext(test, { filename: 'test_' + index + '.js' });
    writeSync(1, nonce + ' pass ' + index + '\n');
  } catch (error) {
    writeSync(1, nonce + ' fail ' + index + ' ' + ((error && error.name) || 'Error') + '\n');
  }
});
`;
