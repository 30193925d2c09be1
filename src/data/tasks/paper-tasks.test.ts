/**
 * The application-paper tasks: `text-to-sql` (Reasoning-SQL #33) and `reranking` (ProRank #17,
 * GroupRank #51). Generated rows are deterministic, the held-out split is disjoint from training,
 * labels are what the task header says they are, and bad options name `taskOptions.<field>`.
 */
import { describe, expect, it } from 'vitest';
import { rerankingTask } from './reranking.js';
import { textToSqlTask } from './text-to-sql.js';

describe('text-to-sql', () => {
  const task = textToSqlTask();
  it('is deterministic and holds its evaluation databases out of training', () => {
    expect(task.trainExamples(20, 3)).toEqual(task.trainExamples(20, 3));
    const train = new Set(task.trainExamples(400, 1).map((row) => row.databaseSeed));
    const held = task.evalExamples(60, 1).map((row) => row.databaseSeed);
    expect(held.filter((seed) => train.has(seed))).toEqual([]);
    expect(task.evalExamples(60, 1).map((row) => row.prompt)).not.toEqual(
      task.trainExamples(60, 1).map((row) => row.prompt),
    );
  });
  it("judges by execution: the gold query is correct, the teacher's mistake mostly is not", async () => {
    const rows = task.evalExamples(10, 2);
    const right = await Promise.all(
      rows.map((row) =>
        task.isCorrect(
          row,
          task.demonstration(row, () => 0.9),
        ),
      ),
    );
    expect(right.every(Boolean)).toBe(true);
    const wrong = await Promise.all(
      rows.map((row) =>
        task.isCorrect(
          row,
          task.demonstration(row, () => 0),
        ),
      ),
    );
    expect(wrong.filter(Boolean).length).toBeLessThan(rows.length);
    expect(await task.isCorrect(rows[0]!, String(rows[0]!.answer))).toBe(false); // no <answer> tag
  });
  it('refuses bad options naming the field', () => {
    expect(() => textToSqlTask({ teacherErrorRate: -1 })).toThrow(/taskOptions\.teacherErrorRate/);
    expect(() => textToSqlTask({ tables: 3 })).toThrow(/taskOptions\.tables: not an option of task "text-to-sql"/);
  });
});

describe('reranking', () => {
  const words = (text: string) => text.split(' ');
  it('groupwise: grades count the query words each document holds, at least one is relevant', () => {
    const task = rerankingTask({ documents: 5 });
    for (const row of task.trainExamples(30, 4)) {
      const [head, ...lines] = String(row.prompt).split('\n');
      const query = words(head!.slice(3));
      const documents = lines.filter((line) => line.startsWith('[')).map((line) => words(line.replace(/^\[\d\] /, '')));
      expect(documents).toHaveLength(5);
      expect(row.relevance).toEqual(
        documents.map((document) => query.filter((word) => document.includes(word)).length),
      );
      expect(Math.max(...(row.relevance as number[]))).toBeGreaterThan(0);
    }
  });
  it('pointwise: the label is 1 exactly when the document shares a query word', () => {
    const task = rerankingTask({ mode: 'pointwise' });
    const rows = task.trainExamples(40, 2);
    for (const row of rows) {
      const [head, document] = String(row.prompt).split('\n');
      const shared = words(head!.slice(3)).filter((word) => words(document!.slice(3)).includes(word)).length;
      expect(row.answer).toBe(shared > 0 ? '1' : '0');
    }
    expect(new Set(rows.map((row) => row.answer))).toEqual(new Set(['0', '1'])); // both labels occur
    expect(task.isCorrect(rows[0]!, `<answer>${rows[0]!.answer}</answer>`)).toBe(true);
  });
  it('holds its evaluation queries out of training', () => {
    const task = rerankingTask();
    const query = (prompt: unknown) => String(prompt).split('\n')[0];
    const train = new Set(task.trainExamples(300, 1).map((row) => query(row.prompt)));
    expect(task.evalExamples(40, 1).filter((row) => train.has(query(row.prompt)))).toEqual([]);
  });
  it('refuses bad options naming the field', () => {
    expect(() => rerankingTask({ mode: 'listwise' })).toThrow(/taskOptions\.mode/);
    expect(() => rerankingTask({ documents: 1 })).toThrow(/taskOptions\.documents/);
  });
});
