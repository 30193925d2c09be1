/*
 * A small SVG line chart for the dashboard: several series over one x axis, nice ticks, phase
 * boundaries (SFT → GRPO), a hover cursor whose values show in the legend, TensorBoard-style
 * exponential-moving-average smoothing (the raw curve drawn faintly behind) and a log-scale y axis.
 * It is not a charting library: no zoom, no animation; the page has no internet and no build
 * step, so this is plain browser JavaScript drawn by hand. The pure helpers (ticks, number text,
 * smoothing) touch no DOM, so the unit tests import them in Node.
 */

const svgNamespace = 'http://www.w3.org/2000/svg';
const width = 420;
const height = 190;
const margin = { left: 48, right: 12, top: 10, bottom: 22 };

/** Series colours, picked to stay distinguishable for common colour-vision deficiencies. */
export const palette = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563'];

/** About `count` round tick values covering [min, max], spaced at least `minStep` apart. */
export function niceTicks(min, max, count = 4, minStep = 0) {
  const span = max - min;
  const rough = span / count;
  const magnitude = 10 ** Math.floor(Math.log10(rough));
  const nice =
    [1, 2, 2.5, 5, 10].map((factor) => factor * magnitude).find((candidate) => span / candidate <= count) ??
    10 * magnitude;
  const step = Math.max(nice, minStep);
  const ticks = [];
  for (let value = Math.ceil(min / step) * step; value <= max + step * 1e-9; value += step)
    ticks.push(Number(value.toPrecision(12)));
  return ticks;
}

/**
 * Ticks for a log axis over the positive range [low, high]: the powers of ten inside it (every
 * k-th one when there are many decades), or linear nice ticks when the range spans less than two
 * powers of ten, where decades alone would leave the axis with one tick or none.
 */
export function logTicks(low, high, count = 4) {
  const first = Math.ceil(Math.log10(low) - 1e-9);
  const last = Math.floor(Math.log10(high) + 1e-9);
  if (last - first + 1 < 2) return niceTicks(low, high, count).filter((value) => value > 0);
  const stride = Math.ceil((last - first + 1) / (count + 1));
  const ticks = [];
  // Number(`1e${k}`) is exact where 10 ** k is not (10 ** -3 = 0.0010000000000000002).
  for (let k = first; k <= last; k += stride) ticks.push(Number(`1e${k}`));
  return ticks;
}

/**
 * TensorBoard's scalar smoothing: an exponential moving average with weight `weight` in [0, 1),
 * divided by 1 − weight^n (n = finite values so far) so the start is not pulled towards 0.
 * Non-finite values pass through and do not count; a constant series is returned as it is.
 * Same as `resmoothDataset` in TensorBoard's vz_line_chart2/line-chart.ts.
 */
export function smoothEma(values, weight) {
  const isConstant = values.every((value) => value === values[0]);
  let last = 0;
  let accumulated = 0;
  return values.map((value) => {
    if (isConstant || !Number.isFinite(value) || weight <= 0) return value;
    last = last * weight + (1 - weight) * value;
    accumulated += 1;
    const debias = weight === 1 ? 1 : 1 - weight ** accumulated;
    return last / debias;
  });
}

/** Compact number text for ticks and legends. */
export function formatNumber(value) {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  const size = Math.abs(value);
  if (size !== 0 && (size < 1e-3 || size >= 1e5)) return value.toExponential(2);
  return String(Number(value.toPrecision(4)));
}

function svgElement(tag, attributes, text) {
  const element = document.createElementNS(svgNamespace, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = text;
  return element;
}

function extent(values, padFraction) {
  let low = Math.min(...values);
  let high = Math.max(...values);
  if (low === high) {
    const pad = Math.abs(low) * 0.1 || 1;
    return [low - pad, high + pad];
  }
  const pad = (high - low) * padFraction;
  return [low - pad, high + pad];
}

/** Path data joining the points in order; sparse series (eval) are joined across the steps they skip. */
function pathData(points, scaleX, scaleY) {
  return points
    .map(([x, y], index) => `${index === 0 ? 'M' : 'L'}${scaleX(x).toFixed(1)} ${scaleY(y).toFixed(1)}`)
    .join(' ');
}

function drawAxes(svg, xRange, yTicks, scaleX, scaleY, formatX) {
  for (const tick of yTicks) {
    const y = scaleY(tick);
    svg.append(svgElement('line', { class: 'grid', x1: margin.left, x2: width - margin.right, y1: y, y2: y }));
    svg.append(
      svgElement('text', { class: 'tick', x: margin.left - 4, y: y + 3, 'text-anchor': 'end' }, formatNumber(tick)),
    );
  }
  // x is a step count: no ticks between whole steps.
  for (const tick of niceTicks(xRange[0], xRange[1], 6, 1)) {
    const x = scaleX(tick);
    svg.append(svgElement('text', { class: 'tick', x, y: height - 6, 'text-anchor': 'middle' }, formatX(tick)));
  }
  const bottom = height - margin.bottom;
  svg.append(svgElement('line', { class: 'axis', x1: margin.left, x2: width - margin.right, y1: bottom, y2: bottom }));
  svg.append(svgElement('line', { class: 'axis', x1: margin.left, x2: margin.left, y1: margin.top, y2: bottom }));
}

function drawLegend(legend, series, valueAt) {
  legend.replaceChildren();
  // `label` is what the legend shows (default: the metric name), `title` its longer tooltip.
  for (const entry of series) {
    const item = document.createElement('span');
    item.className = 'item';
    if (entry.run !== undefined) item.dataset.run = entry.run;
    item.dataset.series = entry.name;
    if (entry.title !== undefined) item.title = entry.title;
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    // A dashed series (a second metric of a compared run) gets a dashed swatch, so the legend says which line is which.
    swatch.style.borderTop = `3px ${entry.dash ? 'dashed' : 'solid'} ${entry.colour}`;
    const value = document.createElement('span');
    value.className = 'value';
    value.textContent = ` ${formatNumber(valueAt(entry))}`;
    item.append(swatch, entry.label ?? entry.name, value);
    legend.append(item);
  }
}

/** Dashed lines where a phase starts inside the range; the phase already running at its left edge is named there. */
function drawPhases(svg, phases, xRange, scaleX) {
  const current = phases.filter((phase) => phase.x <= xRange[0]).at(-1);
  if (current !== undefined && phases.length > 1) {
    svg.append(svgElement('text', { class: 'phase-label', x: margin.left + 3, y: margin.top + 9 }, current.label));
  }
  for (const phase of phases) {
    if (phase.x <= xRange[0] || phase.x > xRange[1]) continue;
    const x = scaleX(phase.x - 0.5);
    svg.append(svgElement('line', { class: 'phase', x1: x, x2: x, y1: margin.top, y2: height - margin.bottom }));
    svg.append(svgElement('text', { class: 'phase-label', x: x + 3, y: margin.top + 9 }, phase.label));
  }
}

/**
 * The series as drawn: each with its colour, its raw points and its smoothed ones, and on a log
 * axis without the points at or below 0 (a logarithm has none there). `notes` say what was left out.
 */
function prepareSeries(spec) {
  const notes = [];
  let logScale = spec.logScale === true;
  let series = spec.series.map((entry, index) => ({
    ...entry,
    colour: entry.colour ?? palette[index % palette.length],
  }));
  if (logScale) {
    const positive = series.some((entry) => entry.points.some(([, y]) => y > 0));
    const nonPositive = series.filter((entry) => entry.points.some(([, y]) => y <= 0));
    if (!positive) {
      logScale = false;
      notes.push('log scale needs values above 0 and this chart has none: drawn linear');
    } else if (nonPositive.length > 0) {
      const names = [...new Set(nonPositive.map((entry) => entry.label ?? entry.name))];
      notes.push(`log scale: values ≤ 0 left out (${names.join(', ')})`);
      // Left out before smoothing, so the smoothed curve follows the points that are drawn.
      series = series
        .map((entry) => ({ ...entry, points: entry.points.filter(([, y]) => y > 0) }))
        .filter((entry) => entry.points.length > 0);
    }
  }
  const prepared = series.map((entry) => {
    const smoothed = smoothEma(
      entry.points.map(([, y]) => y),
      spec.smoothing ?? 0,
    );
    return { ...entry, raw: entry.points, shown: entry.points.map(([x], k) => [x, smoothed[k]]) };
  });
  return { prepared, notes, logScale };
}

/**
 * Draw `spec` = { id, title, series: [{ name, label?, title?, run?, colour?, dash?, points: [[x, y], …] }],
 * phases: [{ x, label }], describeX(x), formatX(x), smoothing (0 … 0.99), logScale } into
 * `container`, replacing what was there; x ticks use formatX. With smoothing > 0 each series is
 * drawn smoothed, its raw curve faintly behind (`path.raw`); hover values are the smoothed ones.
 */
export function renderLineChart(container, spec) {
  container.replaceChildren();
  container.className = 'chart panel';
  container.dataset.chart = spec.id;
  const heading = document.createElement('h3');
  heading.textContent = spec.title;
  const { prepared, notes, logScale } = prepareSeries(spec);
  const axisValue = logScale ? Math.log10 : (y) => y;
  const allRaw = prepared.flatMap((entry) => entry.raw);
  const xRange = extent(
    allRaw.map(([x]) => x),
    0,
  );
  const yRange = extent(
    allRaw.map(([, y]) => axisValue(y)),
    0.05,
  );
  const scaleX = (x) =>
    margin.left + ((x - xRange[0]) / (xRange[1] - xRange[0])) * (width - margin.left - margin.right);
  const scaleY = (y) =>
    height -
    margin.bottom -
    ((axisValue(y) - yRange[0]) / (yRange[1] - yRange[0])) * (height - margin.top - margin.bottom);
  const yTicks = logScale ? logTicks(10 ** yRange[0], 10 ** yRange[1]) : niceTicks(yRange[0], yRange[1]);
  const svg = svgElement('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': spec.title });
  svg.dataset.scale = logScale ? 'log' : 'linear';
  drawAxes(svg, xRange, yTicks, scaleX, scaleY, spec.formatX ?? formatNumber);
  drawPhases(svg, spec.phases ?? [], xRange, scaleX);
  const smoothing = spec.smoothing ?? 0;
  const tag = (path, entry) => {
    path.dataset.series = entry.name;
    if (entry.run !== undefined) path.dataset.run = entry.run;
    if (entry.dash) path.setAttribute('stroke-dasharray', entry.dash);
    return path;
  };
  // Raw curves first, so every smoothed curve lies on top of all of them.
  if (smoothing > 0) {
    for (const entry of prepared)
      svg.append(
        tag(svgElement('path', { class: 'raw', d: pathData(entry.raw, scaleX, scaleY), stroke: entry.colour }), entry),
      );
  }
  for (const entry of prepared) {
    const path = tag(
      svgElement('path', { class: 'series', d: pathData(entry.shown, scaleX, scaleY), stroke: entry.colour }),
      entry,
    );
    path.dataset.points = String(entry.shown.length);
    svg.append(path);
    if (entry.shown.length <= 12) {
      for (const [x, y] of entry.shown)
        svg.append(svgElement('circle', { cx: scaleX(x), cy: scaleY(y), r: 2.5, fill: entry.colour }));
    }
  }
  const cursor = svgElement('line', {
    class: 'cursor',
    y1: margin.top,
    y2: height - margin.bottom,
    visibility: 'hidden',
  });
  svg.append(cursor);
  const caption = document.createElement('div');
  caption.className = 'legend';
  const legend = document.createElement('div');
  legend.className = 'legend';
  const latest = (entry) => entry.shown.at(-1)?.[1];
  drawLegend(legend, prepared, latest);
  const xs = [...new Set(allRaw.map(([x]) => x))].sort((a, b) => a - b);
  svg.addEventListener('mousemove', (event) => {
    const box = svg.getBoundingClientRect();
    const pointerX = ((event.clientX - box.left) / box.width) * width;
    const nearest = xs.reduce(
      (best, x) => (Math.abs(scaleX(x) - pointerX) < Math.abs(scaleX(best) - pointerX) ? x : best),
      xs[0],
    );
    cursor.setAttribute('x1', String(scaleX(nearest)));
    cursor.setAttribute('x2', String(scaleX(nearest)));
    cursor.setAttribute('visibility', 'visible');
    caption.textContent = spec.describeX ? spec.describeX(nearest) : `x = ${nearest}`;
    drawLegend(legend, prepared, (entry) => entry.shown.find(([x]) => x === nearest)?.[1]);
  });
  svg.addEventListener('mouseleave', () => {
    cursor.setAttribute('visibility', 'hidden');
    caption.textContent = '';
    drawLegend(legend, prepared, latest);
  });
  const note = document.createElement('div');
  note.className = 'note';
  note.textContent = notes.join(' · ');
  container.append(heading, svg, legend, caption);
  if (notes.length > 0) container.append(note);
}
