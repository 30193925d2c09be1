/**
 * The two halves of a test run, per language, both run inside the sandbox:
 * - the solution server (untrusted process): loads `solution.py` / `solution.js`, says whether it
 *   loaded, then answers "which of these names do you define?" and "call this function with these
 *   arguments" on fd 3;
 * - the grader (trusted process, which the solution cannot see or signal): reads the tests and a
 *   nonce on stdin, stands in a proxy for each name the tests use that the solution defines, runs
 *   the setup and each test in its own interpreter, and writes one result line per test on fd 3.
 *
 * Why: assertions, `exec`, `assert`, `vm` and the nonce live only in the grader, so a completion
 * that replaces them, reads them, or exits early changes nothing but its own answers. Values
 * cross as plain data (numbers, strings, lists, dicts, sets…), decoded strictly by the grader, so
 * an object whose `__eq__` always says yes cannot cross. The cost, which is not hidden: functions
 * that mutate their arguments or take or return callables, class instances or other objects do not
 * work across the boundary; such tests fail.
 */

/** Python value codec, shared by both halves: tagged JSON trees; `decode` builds only built-in types. */
const PYTHON_CODEC = String.raw`
import json, os, sys, types
def encode(value, depth=0):
    if depth > 100: raise ValueError('value nested too deeply')
    # subclasses (Counter, OrderedDict, namedtuple, an int with a lying __eq__) travel as their base type
    kind = type(value)
    if value is None: return ['n']
    if isinstance(value, bool): return ['b', value is True or bool.__bool__(value)]
    if isinstance(value, int): return ['i', int.__repr__(value)]
    if isinstance(value, float): return ['f', float.__repr__(value)]
    if isinstance(value, complex): return ['c', float.__repr__(value.real), float.__repr__(value.imag)]
    if isinstance(value, str): return ['s', str.__str__(value)]
    if isinstance(value, bytes): return ['y', bytes.hex(value)]
    for base, tag in ((list, 'l'), (tuple, 't'), (set, 'S'), (frozenset, 'F')):
        if isinstance(value, base): return [tag, [encode(item, depth + 1) for item in base.__iter__(value)]]
    if isinstance(value, dict): return ['d', [[encode(key, depth + 1), encode(item, depth + 1)] for key, item in dict.items(value)]]
    if kind is range: return ['r', value.start, value.stop, value.step]
    if isinstance(value, types.GeneratorType) or (hasattr(kind, '__next__') and hasattr(kind, '__iter__')):
        items = []
        for item in value:
            if len(items) >= 1000000: raise ValueError('iterator too long')
            items.append(encode(item, depth + 1))
        return ['g', items]
    raise TypeError('a %s cannot pass between the solution and the tests' % kind.__name__)
def decode(tree):
    tag = tree[0]
    if tag == 'n': return None
    if tag == 'b': return tree[1] is True
    if tag == 'i': return int(str(tree[1]))
    if tag == 'f': return float(str(tree[1]))
    if tag == 'c': return complex(float(str(tree[1])), float(str(tree[2])))
    if tag == 's' and type(tree[1]) is str: return tree[1]
    if tag == 'y': return bytes.fromhex(str(tree[1]))
    if tag in ('l', 't', 'S', 'F', 'g'): return {'l': list, 't': tuple, 'S': set, 'F': frozenset, 'g': iter}[tag]([decode(item) for item in tree[1]])
    if tag == 'd': return dict((decode(key), decode(item)) for key, item in tree[1])
    if tag == 'r': return range(int(tree[1]), int(tree[2]), int(tree[3]))
    raise ValueError('malformed value')
def send(writer, message):
    writer.write(json.dumps(message).encode() + b'\n'); writer.flush()
`;

/** Python solution server: the program file of a test run. */
export const PYTHON_SOLUTION_SERVER =
  PYTHON_CODEC +
  String.raw`
reader = os.fdopen(3, 'rb')
writer = os.fdopen(os.dup(3), 'wb')
with open('solution.py') as handle:
    source = handle.read()
os.remove('solution.py')
scope = {'__name__': '__solution__'}
try:
    exec(compile(source, 'solution.py', 'exec'), scope)
except BaseException as error:
    send(writer, {'load-error': type(error).__name__})
    sys.exit(0)
send(writer, {'loaded': True})
def describe(name):
    value = scope[name]
    if isinstance(value, types.ModuleType): return ['module', value.__name__]
    if callable(value): return ['function']
    return ['value', encode(value)]
for line in reader:
    request = json.loads(line)
    try:
        if 'lookup' in request:
            found = {}
            for name in request['lookup']:
                if name in scope and not name.startswith('__'):
                    try: found[name] = describe(name)
                    except (TypeError, ValueError): pass
            reply = {'found': found}
        else:
            reply = {'value': encode(scope[request['call']](*decode(request['args']), **decode(request['kwargs'])))}
    except BaseException as error:
        reply = {'error': [type(error).__name__, str(error)[:500]]}
    send(writer, reply)
`;

/** Python grader: stdin = nonce line + `{ setup, tests }` JSON; results on fd 3. */
export const PYTHON_GRADER =
  PYTHON_CODEC +
  String.raw`
import builtins, importlib, keyword, re
try:  # not dumpable: where the solution shares our uid (no namespaces) it cannot read our memory or fds
    import ctypes
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
except Exception:
    pass
nonce = sys.stdin.readline().strip()
spec = json.loads(sys.stdin.read())
results = os.fdopen(3, 'w')
reader = os.fdopen(4, 'rb')
writer = os.fdopen(os.dup(4), 'wb')
def report(line):
    results.write(nonce + ' ' + line + '\n'); results.flush()
report('ready')
class SolutionGone(BaseException):
    pass
def receive():
    try:
        line = reader.readline()
        message = json.loads(line) if line else None
    except (OSError, ValueError):
        message = None
    if not isinstance(message, dict): raise SolutionGone('the solution process ended')
    return message
def exchange(message):
    try: send(writer, message)
    except OSError: raise SolutionGone('the solution process ended')
    return receive()
def remote_error(error):
    if not (isinstance(error, list) and len(error) == 2 and all(type(part) is str for part in error)): error = ['RuntimeError', 'malformed reply']
    kind = getattr(builtins, error[0], None)
    if not (isinstance(kind, type) and issubclass(kind, Exception)): kind = RuntimeError
    try: return kind(error[1])
    except Exception: return RuntimeError(error[1])
def proxy(name):
    def call(*args, **kwargs):
        reply = exchange({'call': name, 'args': encode(list(args)), 'kwargs': encode(dict(kwargs))})
        if 'value' in reply: return decode(reply['value'])
        raise remote_error(reply.get('error'))
    call.__name__ = call.__qualname__ = name
    return call
try:
    first = receive()
except SolutionGone:
    first = {'load-error': 'SolutionExited'}
if first.get('loaded') is not True:
    name = first.get('load-error')
    report('load-error ' + (name if type(name) is str and re.fullmatch(r'\w{1,100}', name) else 'SolutionExited'))
    sys.exit(0)
source = '\n'.join([spec['setup']] + spec['tests'])
wanted = sorted(set(re.findall(r'[A-Za-z_]\w*', source)) - set(dir(builtins)) - set(keyword.kwlist))
scope = {'__name__': '__tests__'}
try:
    for name, kind in exchange({'lookup': wanted}).get('found', {}).items():
        if name not in wanted or not isinstance(kind, list) or not kind: continue
        if kind[0] == 'function': scope[name] = proxy(name)
        elif kind[0] == 'value': scope[name] = decode(kind[1])
        elif kind[0] == 'module' and type(kind[1]) is str and kind[1].split('.')[0] in sys.stdlib_module_names: scope[name] = importlib.import_module(kind[1])
    exec(compile(spec['setup'], 'setup.py', 'exec'), scope)
except BaseException as error:
    report('load-error ' + type(error).__name__)
    sys.exit(0)
for index, test in enumerate(spec['tests']):
    try:
        exec(compile(test, 'test_%d.py' % index, 'exec'), scope)
        report('pass %d' % index)
    except BaseException as error:
        report('fail %d %s' % (index, type(error).__name__))
`;

/** JavaScript value codec: tagged JSON trees; `decode` builds only plain data in the grader's realm. */
const JAVASCRIPT_CODEC = String.raw`
const fs = require('node:fs');
const vm = require('node:vm');
function encode(value, depth = 0) {
  if (depth > 100) throw new RangeError('value nested too deeply');
  if (value === undefined) return ['u'];
  if (value === null) return ['n'];
  if (typeof value === 'boolean') return ['b', value];
  if (typeof value === 'number') return ['d', Object.is(value, -0) ? '-0' : String(value)];
  if (typeof value === 'string') return ['s', value];
  if (typeof value === 'bigint') return ['g', value.toString()];
  if (Array.isArray(value)) return ['a', Array.from(value, (item) => encode(item, depth + 1))];
  if (value instanceof Map) return ['m', [...value].map(([key, item]) => [encode(key, depth + 1), encode(item, depth + 1)])];
  if (value instanceof Set) return ['S', [...value].map((item) => encode(item, depth + 1))];
  const prototype = typeof value === 'object' ? Object.getPrototypeOf(value) : undefined;
  if (prototype === null || (prototype && prototype === Object.getPrototypeOf({}))) return ['o', Object.keys(value).map((key) => [key, encode(value[key], depth + 1)])];
  throw new TypeError('a ' + typeof value + ' that is not plain data cannot pass between the solution and the tests');
}
function decode(tree) {
  switch (tree[0]) {
    case 'u': return undefined;
    case 'n': return null;
    case 'b': return tree[1] === true;
    case 'd': return Number(String(tree[1]));
    case 's': if (typeof tree[1] === 'string') return tree[1]; break;
    case 'g': return BigInt(String(tree[1]));
    case 'a': return tree[1].map(decode);
    case 'm': return new Map(tree[1].map(([key, item]) => [decode(key), decode(item)]));
    case 'S': return new Set(tree[1].map(decode));
    case 'o': {
      const object = {};
      for (const [key, item] of tree[1]) Object.defineProperty(object, String(key), { value: decode(item), enumerable: true, writable: true, configurable: true });
      return object;
    }
  }
  throw new TypeError('malformed value from the solution');
}
const errorName = (error) => String((error && error.name) || 'Error').replace(/\W/g, '').slice(0, 100) || 'Error';
let pending = Buffer.alloc(0);
const chunk = Buffer.alloc(65536);
function send(fd, message) {
  const bytes = Buffer.from(JSON.stringify(message) + '\n');
  for (let at = 0; at < bytes.length; ) at += fs.writeSync(fd, bytes, at);
}
function receive(fd) {
  for (;;) {
    const at = pending.indexOf(10);
    if (at >= 0) {
      const line = pending.subarray(0, at).toString('utf8');
      pending = pending.subarray(at + 1);
      return JSON.parse(line);
    }
    const count = fs.readSync(fd, chunk, 0, chunk.length, null);
    if (count === 0) return null;
    pending = Buffer.concat([pending, chunk.subarray(0, count)]);
  }
}
`;

/** JavaScript solution server: the program file of a test run. */
export const JAVASCRIPT_SOLUTION_SERVER =
  JAVASCRIPT_CODEC +
  String.raw`
const source = fs.readFileSync('solution.js', 'utf8');
fs.rmSync('solution.js');
try {
  vm.runInThisContext(source, { filename: 'solution.js' });
} catch (error) {
  send(3, { 'load-error': errorName(error) });
  process.exit(0);
}
send(3, { loaded: true });
async function answer(request) {
  try {
    if (request.lookup) {
      const found = {};
      for (const name of request.lookup) {
        try {
          const kind = vm.runInThisContext('typeof ' + name);
          if (kind === 'function') found[name] = ['function'];
          else if (kind !== 'undefined') found[name] = ['value', encode(vm.runInThisContext(name))];
        } catch {
          // a keyword, a binding not yet initialised, or a value that is not plain data
        }
      }
      return { found };
    }
    const value = await vm.runInThisContext(request.call)(...decode(request.args));
    return { value: encode(value) };
  } catch (error) {
    return { error: [errorName(error), String((error && error.message) || '').slice(0, 500)] };
  }
}
(async () => {
  for (let request = receive(3); request; request = receive(3)) send(3, await answer(request));
  process.exit(0);
})();
`;

/** JavaScript grader: stdin = nonce line + `{ setup, tests }` JSON; tests see the solution's names and `assert` (node:assert). */
export const JAVASCRIPT_GRADER =
  JAVASCRIPT_CODEC +
  String.raw`
const input = fs.readFileSync(0, 'utf8');
const nonce = input.slice(0, input.indexOf('\n')).trim();
const spec = JSON.parse(input.slice(input.indexOf('\n') + 1));
const report = (line) => fs.writeSync(3, nonce + ' ' + line + '\n');
report('ready');
class SolutionGone extends Error {}
function exchange(message) {
  let reply = null;
  try {
    send(4, message);
    reply = receive(4);
  } catch {
    // the solution process is gone
  }
  if (!reply || typeof reply !== 'object') throw new SolutionGone('the solution process ended');
  return reply;
}
const errorKinds = { Error, TypeError, RangeError, SyntaxError, ReferenceError, EvalError, URIError };
function proxy(name) {
  return (...args) => {
    const reply = exchange({ call: name, args: encode(args) });
    if ('value' in reply) return decode(reply.value);
    const [kind, message] = Array.isArray(reply.error) ? reply.error : ['Error', 'malformed reply'];
    throw new (Object.hasOwn(errorKinds, kind) ? errorKinds[kind] : Error)(String(message));
  };
}
let first = null;
try {
  first = receive(4);
} catch {
  // gone before it said anything
}
if (!first || first.loaded !== true) {
  const name = first && first['load-error'];
  report('load-error ' + (typeof name === 'string' && /^\w{1,100}$/.test(name) ? name : 'SolutionExited'));
  process.exit(0);
}
globalThis.assert = require('node:assert');
const source = [spec.setup, ...spec.tests].join('\n');
const wanted = [...new Set(source.match(/[A-Za-z_$][\w$]*/g) || [])].filter((name) => !(name in globalThis));
try {
  const found = exchange({ lookup: wanted }).found || {};
  for (const name of wanted) {
    const kind = Object.hasOwn(found, name) ? found[name] : null;
    if (Array.isArray(kind) && kind[0] === 'function') globalThis[name] = proxy(name);
    else if (Array.isArray(kind) && kind[0] === 'value') globalThis[name] = decode(kind[1]);
  }
  vm.runInThisContext(spec.setup, { filename: 'setup.js' });
} catch (error) {
  report('load-error ' + errorName(error));
  process.exit(0);
}
spec.tests.forEach((test, index) => {
  try {
    vm.runInThisContext(test, { filename: 'test_' + index + '.js' });
    report('pass ' + index);
  } catch (error) {
    report('fail ' + index + ' ' + errorName(error));
  }
});
process.exit(0);
`;
