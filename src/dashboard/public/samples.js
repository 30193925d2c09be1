/*
 * How the dashboard shows a logged step's samples (samples.jsonl rows, docs/run-folder.md): each
 * prompt group with its completions table, per-reward scores (`–` not applicable, `error` thrown)
 * and advantages, and an agent completion's episode turn by turn. Only rendering: app.js fetches
 * the step and picks it; every text goes in as a text node (completions are model output).
 */
import { formatNumber } from './chart.js';
import { element } from './dom.js';

function scoreCell(value) {
  if (value === 'error') return element('td', { className: 'error', title: 'the reward threw or timed out' }, 'error');
  if (value === null || value === undefined)
    return element('td', { className: 'missing', title: 'not applicable' }, '–');
  return element('td', {}, formatNumber(value));
}

/** An agent episode, turn by turn: messages by role, tool calls (failed ones marked), and each trained row's tokens with observation tokens (loss mask 0) shown apart. */
function renderEpisode(episode) {
  const list = (value) => (Array.isArray(value) ? value : []);
  const messages = list(episode.messages).map((message) =>
    element(
      'div',
      { className: `turn role-${String(message.role).replace(/[^a-z]/g, '')}` },
      element('span', { className: 'role' }, String(message.role)),
      String(message.content ?? ''),
    ),
  );
  const calls = list(episode.toolCalls).map((call) =>
    element(
      'div',
      { className: call.error === undefined ? 'tool-call' : 'tool-call failed' },
      `turn ${call.turn}: ${call.name || '(malformed)'}(${JSON.stringify(call.arguments ?? {})}) → ${call.result}`,
    ),
  );
  const rows = list(episode.rows).map((row, r) =>
    element(
      'div',
      { className: 'tokens' },
      element('span', { className: 'role' }, `row ${r + 1}`),
      ...list(row.segments).map((segment) =>
        element(
          'span',
          {
            className: segment.trained ? 'trained' : 'masked',
            title: segment.trained ? 'sampled: in the loss' : 'observation: loss mask 0',
          },
          String(segment.text ?? ''),
        ),
      ),
    ),
  );
  return element(
    'details',
    { className: 'episode' },
    element(
      'summary',
      {},
      `episode: ${episode.turns} turn(s), stop ${episode.stopReason}, ${calls.length} tool call(s)`,
    ),
    element('div', { className: 'messages' }, ...messages),
    calls.length > 0 ? element('div', { className: 'calls' }, ...calls) : null,
    element('div', { className: 'rows' }, ...rows),
  );
}

/**
 * One prompt group of a logged step: its images, the prompt, the expected answer and a table of
 * the completions with their rewards, advantage, length and finish reason. `imageUrl(name)` is
 * where the run's images/NAME.png is served.
 */
export function renderGroup(group, index, imageUrl) {
  const completions = Array.isArray(group.completions) ? group.completions : [];
  const rewardNames = [...new Set(completions.flatMap((completion) => Object.keys(completion.rewards ?? {})))];
  const header = element(
    'tr',
    {},
    ...['#', 'completion', 'reward', ...rewardNames, 'advantage', 'length', 'finish'].map((name) =>
      element('th', { className: name === 'completion' ? 'text' : '' }, name),
    ),
  );
  const rows = completions.map((completion, k) => {
    const advantage = completion.advantage;
    const advantageClass =
      typeof advantage !== 'number' ? 'missing' : advantage > 0 ? 'positive' : advantage < 0 ? 'negative' : '';
    return element(
      'tr',
      { className: 'completion' },
      element('td', {}, k + 1),
      element(
        'td',
        { className: 'text' },
        String(completion.text ?? ''),
        completion.episode ? renderEpisode(completion.episode) : null,
      ),
      scoreCell(completion.reward),
      ...rewardNames.map((name) => scoreCell(completion.rewards?.[name])),
      element('td', { className: advantageClass }, formatNumber(typeof advantage === 'number' ? advantage : null)),
      element('td', {}, completion.length ?? '–'),
      element('td', {}, completion.finishReason ?? '–'),
    );
  });
  return element(
    'div',
    { className: 'group' },
    element(
      'div',
      {},
      element('b', {}, `Group ${index + 1}`),
      group.answer === undefined ? null : ` · expected answer: ${String(group.answer)}`,
    ),
    // A vision-language sample's images (PNG files in the run folder) beside its prompt.
    ...(Array.isArray(group.images) ? group.images : []).map((path) =>
      element('img', {
        className: 'sample-image',
        src: imageUrl(String(path).split('/').pop()),
        alt: 'the prompt image',
      }),
    ),
    element(
      'div',
      { className: 'prompt' },
      typeof group.prompt === 'string' ? group.prompt : JSON.stringify(group.prompt),
    ),
    element('table', { className: 'completions' }, element('thead', {}, header), element('tbody', {}, ...rows)),
  );
}
