/*
 * What the dashboard's charts draw, from metrics.jsonl rows: which metrics go in which chart, where
 * each row lies on the x axis (steps restart in each phase, so phases are laid end to end), and
 * the series of one run or of several compared runs (one colour per run, one dash per metric).
 * Pure functions over plain rows: no DOM and no fetching (app.js does both, chart.js draws), so
 * the unit tests import them in Node.
 */
import { palette } from './chart.js';

/** Charts in display order; `names` are metric names, `match` picks a family of them. */
export const chartDefinitions = [
  {
    id: 'reward',
    title: 'Reward (overall and per reward)',
    match: (name) => name === 'reward/mean' || /^reward\/.+\/mean$/.test(name),
  },
  {
    id: 'eval',
    title: 'Evaluation',
    match: (name) =>
      ['eval/accuracy', 'eval/passAtK', 'eval/meanReward'].includes(name) || /^eval\/reward\//.test(name),
  },
  { id: 'kl', title: 'KL', names: ['loss/kl', 'kl/approx'] },
  { id: 'entropy', title: 'Entropy', names: ['entropy'] },
  {
    id: 'lengths',
    title: 'Completion length (tokens)',
    names: ['completions/meanLength', 'completions/minLength', 'completions/maxLength'],
  },
  {
    id: 'clip',
    title: 'Clip and truncation fractions',
    names: ['clip/low', 'clip/high', 'clip/region', 'completions/clippedRatio'],
  },
  { id: 'loss', title: 'Loss', names: ['loss/policy', 'loss/total', 'loss/sft', 'loss/flowMatching'] },
  { id: 'gradNorm', title: 'Gradient norm', names: ['gradNorm'] },
  { id: 'lr', title: 'Learning rate', names: ['lr'] },
  { id: 'speed', title: 'Tokens per second', names: ['tokensPerSecond'] },
];

/** Dash patterns telling a compared run's metrics apart (its colour names the run). */
const dashes = ['', '5 3', '1.5 2.5', '8 3 2 3'];

/**
 * The x of every row of several runs on one shared axis: phases in order of first appearance
 * (the first run's first), each phase starting after the longest earlier phase of any run, so an
 * SFT phase of 10 steps in one run and none in another still lines up their GRPO steps.
 * Returns `placed[r]` = [{ x, row }] for run r and `phases` = [{ x, label, offset }].
 */
export function placeRuns(rowLists) {
  const longest = new Map(); // phase → its largest step in any run, in order of first appearance
  for (const rows of rowLists) {
    for (const row of rows) {
      const phase = String(row.phase ?? '');
      longest.set(phase, Math.max(longest.get(phase) ?? 0, row.step));
    }
  }
  const offsets = new Map();
  const phases = [];
  let offset = 0;
  for (const [phase, maxStep] of longest) {
    offsets.set(phase, offset);
    phases.push({ x: offset + 1, label: phase, offset });
    offset += maxStep;
  }
  const placed = rowLists.map((rows) =>
    rows.map((row) => ({ x: offsets.get(String(row.phase ?? '')) + row.step, row })),
  );
  return { placed, phases };
}

/** The metric names of `definition` that any of the placed rows logs as numbers, in the chart's order. */
function metricNames(definition, placedLists) {
  const names = [];
  for (const placed of placedLists) {
    for (const { row } of placed) {
      for (const name of Object.keys(row)) {
        const wanted = definition.names ? definition.names.includes(name) : definition.match(name);
        if (wanted && typeof row[name] === 'number' && !names.includes(name)) names.push(name);
      }
    }
  }
  if (definition.names) names.sort((a, b) => definition.names.indexOf(a) - definition.names.indexOf(b));
  else names.sort((a, b) => (a === 'reward/mean' ? -1 : b === 'reward/mean' ? 1 : 0));
  return names;
}

function pointsOf(placed, name) {
  return placed
    .filter(({ row }) => typeof row[name] === 'number' && Number.isFinite(row[name]))
    .map(({ x, row }) => [x, row[name]]);
}

/**
 * The series of one chart. One run: one series per metric, coloured by metric (chart.js picks).
 * Several runs (`runIds[r]` for `placedLists[r]`): one series per run and metric, the run's
 * colour for all its metrics, a dash per metric, labelled by metric (by run when the chart has
 * one metric), with "run · metric" as the title. Series without points are left out.
 */
export function chartSeries(definition, placedLists, runIds) {
  const names = metricNames(definition, placedLists);
  if (placedLists.length === 1) {
    return names
      .map((name) => ({ name, points: pointsOf(placedLists[0], name) }))
      .filter((entry) => entry.points.length > 0);
  }
  return placedLists.flatMap((placed, r) =>
    names
      .map((name, m) => ({
        name,
        run: runIds[r],
        // The colour names the run (the legend above the charts says which is which), so a chart
        // of several metrics labels its lines by metric; one of a single metric, by run.
        label: names.length === 1 ? runIds[r] : name,
        title: `${runIds[r]} · ${name}`,
        colour: palette[r % palette.length],
        dash: dashes[m % dashes.length],
        points: pointsOf(placed, name),
      }))
      .filter((entry) => entry.points.length > 0),
  );
}
