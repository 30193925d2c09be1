/*
 * A small SVG line chart for the dashboard: several series over one x axis, nice ticks, phase
 * boundaries (SFT → GRPO), and a hover cursor whose values show in the legend.
 * It is not a charting library: linear axes only, no zoom, no animation; the page has no
 * internet and no build step, so this is plain browser JavaScript drawn by hand.
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

function drawAxes(svg, xRange, yRange, scaleX, scaleY, formatX) {
  for (const tick of niceTicks(yRange[0], yRange[1])) {
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
  series.forEach((entry, index) => {
    const item = document.createElement('span');
    const swatch = document.createElement('span');
    swatch.className = 'swatch';
    swatch.style.background = palette[index % palette.length];
    const value = document.createElement('span');
    value.className = 'value';
    value.textContent = ` ${formatNumber(valueAt(entry))}`;
    item.append(swatch, entry.name, value);
    legend.append(item);
  });
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
 * Draw `spec` = { id, title, series: [{ name, points: [[x, y], …] }], phases: [{ x, label }],
 * describeX(x), formatX(x) } into `container`, replacing what was there; x ticks use formatX.
 */
export function renderLineChart(container, spec) {
  container.replaceChildren();
  container.className = 'chart panel';
  container.dataset.chart = spec.id;
  const heading = document.createElement('h3');
  heading.textContent = spec.title;
  const allPoints = spec.series.flatMap((entry) => entry.points);
  const xRange = extent(
    allPoints.map(([x]) => x),
    0,
  );
  const yRange = extent(
    allPoints.map(([, y]) => y),
    0.05,
  );
  const scaleX = (x) =>
    margin.left + ((x - xRange[0]) / (xRange[1] - xRange[0])) * (width - margin.left - margin.right);
  const scaleY = (y) =>
    height - margin.bottom - ((y - yRange[0]) / (yRange[1] - yRange[0])) * (height - margin.top - margin.bottom);
  const svg = svgElement('svg', { viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': spec.title });
  drawAxes(svg, xRange, yRange, scaleX, scaleY, spec.formatX ?? formatNumber);
  drawPhases(svg, spec.phases ?? [], xRange, scaleX);
  spec.series.forEach((entry, index) => {
    const colour = palette[index % palette.length];
    const path = svgElement('path', { class: 'series', d: pathData(entry.points, scaleX, scaleY), stroke: colour });
    path.dataset.series = entry.name;
    path.dataset.points = String(entry.points.length);
    svg.append(path);
    if (entry.points.length <= 12) {
      for (const [x, y] of entry.points)
        svg.append(svgElement('circle', { cx: scaleX(x), cy: scaleY(y), r: 2.5, fill: colour }));
    }
  });
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
  const latest = (entry) => entry.points.at(-1)?.[1];
  drawLegend(legend, spec.series, latest);
  const xs = [...new Set(allPoints.map(([x]) => x))].sort((a, b) => a - b);
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
    drawLegend(legend, spec.series, (entry) => entry.points.find(([x]) => x === nearest)?.[1]);
  });
  svg.addEventListener('mouseleave', () => {
    cursor.setAttribute('visibility', 'hidden');
    caption.textContent = '';
    drawLegend(legend, spec.series, latest);
  });
  container.append(heading, svg, legend, caption);
}
