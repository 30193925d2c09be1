/**
 * The supervisor: a small Node program (CommonJS, kept as a string) that `sandbox.ts` starts as
 * the first process inside the sandbox. It closes descriptors it inherited by accident, builds the
 * private filesystem (namespaces only), starts the untrusted program and, for test runs, the
 * grader beside it, relays the grader's calls into the program, and kills what is left when the
 * grader or the program is done.
 *
 * It is not the policy: every command line (namespaces, uids, rlimits) is built by `sandbox.ts`
 * and arrives in `supervisor.json`; this file only carries it out. It runs trusted, as root of its
 * namespaces (or as the caller without them), and never runs model output itself.
 */

/** The supervisor program. Reads `supervisor.json` (see `SupervisorConfig` in sandbox.ts) from its working directory. */
export const SUPERVISOR_SCRIPT = String.raw`'use strict';
const fs = require('node:fs');
const { spawn, spawnSync } = require('node:child_process');
const { constants } = require('node:os');

// Descriptors that reached us without close-on-exec were leaked by whoever started the training
// run; Node opens all of its own with close-on-exec, so any fd above 3 without it is such a leak.
for (const name of fs.readdirSync('/proc/self/fd')) {
  const fd = Number(name);
  if (fd <= 3) continue;
  try {
    const flags = parseInt(/flags:\s+(\d+)/.exec(fs.readFileSync('/proc/self/fdinfo/' + fd, 'utf8'))[1], 8);
    if ((flags & 0o2000000) === 0) fs.closeSync(fd);
  } catch {
    // the fd of the readdir itself, gone already
  }
}

const config = JSON.parse(fs.readFileSync('supervisor.json', 'utf8'));
process.title = config.title; // how sandbox.ts recognises us while we exit (our command line then reads empty)
fs.rmSync('supervisor.json');
fs.rmSync(__filename);
const files = {};
for (const name of fs.readdirSync('.')) files[name] = fs.readFileSync(name);

function mount(args, required) {
  const result = spawnSync('mount', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  if (result.status !== 0 && required) fail('mount ' + args.join(' ') + ': ' + String(result.stderr).trim());
}

function fail(message) {
  fs.writeSync(2, 'sandbox supervisor: ' + message + '\n');
  process.exit(125);
}

// Everything read-only except a size-limited tmpfs on /tmp (also seen as /dev/shm): the program
// can fill only memory that is counted, and the tmpfs dies with the mount namespace.
function privateFilesystem() {
  const unescape = (text) => text.replace(/\\([0-7]{3})/g, (_, code) => String.fromCharCode(parseInt(code, 8)));
  for (const line of fs.readFileSync('/proc/self/mountinfo', 'utf8').trim().split('\n')) {
    const fields = line.split(' ');
    const point = unescape(fields[4]);
    const options = fields[5].split(',');
    if (options.includes('ro') || /^\/(proc|sys|dev)(\/|$)/.test(point)) continue;
    // a user namespace may not drop the flags a mount already has, so they are passed again
    const kept = options.filter((option) => option !== 'rw');
    mount(['-o', ['remount', 'bind', 'ro', ...kept].join(','), point], point === '/');
  }
  for (const hidden of config.hide) {
    if (config.keep.some((path) => path === hidden || path.startsWith(hidden + '/'))) continue;
    try {
      if (!fs.lstatSync(hidden).isDirectory()) continue;
    } catch {
      continue;
    }
    mount(['-t', 'tmpfs', '-o', 'ro,size=16k,mode=755', 'tmpfs', hidden], true);
  }
  mount(['-t', 'tmpfs', '-o', 'size=' + config.scratchBytes + ',mode=1777', 'tmpfs', '/tmp'], true);
  mount(['--bind', '/tmp', '/dev/shm'], true);
  fs.mkdirSync(config.workDir, { mode: 0o700 });
  for (const [name, content] of Object.entries(files)) fs.writeFileSync(config.workDir + '/' + name, content);
}

if (config.scratchBytes !== null) privateFilesystem();
if (config.owner !== null) {
  for (const name of fs.readdirSync(config.workDir)) fs.chownSync(config.workDir + '/' + name, config.owner, config.owner);
  fs.chownSync(config.workDir, config.owner, config.owner);
}

const environment = { PATH: config.path, LANG: 'C.UTF-8', HOME: config.workDir };
const [command, ...args] = config.program.argv;
const program = spawn(command, args, {
  cwd: config.workDir,
  env: environment,
  stdio: config.grader ? ['ignore', 'inherit', 'inherit', 'pipe'] : ['pipe', 'inherit', 'inherit'],
  detached: config.program.detached,
});
program.on('error', (error) => fail('could not start ' + command + ': ' + error.message));
if (!config.grader) {
  program.stdin.on('error', () => {});
  program.stdin.end(config.program.stdin);
  program.on('exit', (code, signal) => finish(code ?? 128 + (constants.signals[signal] ?? 9)));
} else {
  const [graderCommand, ...graderArgs] = config.grader.argv;
  const grader = spawn(graderCommand, graderArgs, { cwd: '/', env: { PATH: config.path, LANG: 'C.UTF-8' }, stdio: ['pipe', 'inherit', 'inherit', 3, 'pipe'] });
  grader.on('error', (error) => fail('could not start the grader: ' + error.message));
  grader.stdin.on('error', () => {});
  grader.stdin.end(config.grader.input);
  relay(grader.stdio[4], program.stdio[3], Infinity);
  relay(program.stdio[3], grader.stdio[4], config.maxReplyBytes);
  grader.on('exit', () => finish(0));
}

// Copies one direction of the grader <-> program channel; a program that floods it is stopped.
function relay(from, to, limit) {
  let sent = 0;
  from.on('error', () => {});
  to.on('error', () => {});
  from.on('data', (chunk) => {
    sent += chunk.length;
    if (sent > limit) return stop();
    to.write(chunk);
  });
  from.on('end', () => to.end());
}

function stop() {
  try {
    process.kill(config.program.detached ? -program.pid : program.pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

// Without a PID namespace there is no kernel-side "kill everything": descendants are tracked by
// polling /proc, and at the end everything tracked, everything of the sandbox's uids and
// everything whose working directory is the work directory is killed.
const tracked = new Map();
function processTable() {
  const table = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync('/proc/' + entry + '/stat', 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const status = fs.readFileSync('/proc/' + entry + '/status', 'utf8');
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)[1]);
      let cwd = '';
      try {
        cwd = fs.readlinkSync('/proc/' + entry + '/cwd');
      } catch {
        // another user's process
      }
      table.push({ pid: Number(entry), parent: Number(fields[1]), start: fields[19], uid, cwd });
    } catch {
      // ended while we looked
    }
  }
  return table;
}
function track() {
  const table = processTable();
  let grew = true;
  while (grew) {
    grew = false;
    for (const row of table) {
      if (row.pid === process.pid || tracked.has(row.pid)) continue;
      const ours = row.parent === process.pid || tracked.has(row.parent) || config.sweep.uids.includes(row.uid) || (row.cwd !== '' && (row.cwd === config.workDir || row.cwd.startsWith(config.workDir + '/')));
      if (ours) {
        tracked.set(row.pid, row.start);
        grew = true;
      }
    }
  }
  return table;
}
const poll = config.sweep.poll ? setInterval(track, 20) : null;

function finish(code) {
  if (poll) clearInterval(poll);
  stop();
  if (config.sweep.poll || config.sweep.uids.length) {
    for (let round = 0; round < 3; round++) {
      const table = track();
      for (const row of table) {
        if (tracked.get(row.pid) !== row.start) continue;
        try {
          process.kill(row.pid, 'SIGKILL');
        } catch {
          // gone
        }
      }
    }
  }
  process.exit(code);
}
`;
