import { describe, expect, it } from 'vitest';
import { applyAdd, applyEven, applyRemove, applySet, apportion, defaultNewReplica, evenShares } from '../../src/clusters/weights.js';

describe('largest-remainder arithmetic', () => {
  it('evenShares gives the remainder to the first names in name order', () => {
    expect(evenShares(['c', 'a', 'b'], 100)).toEqual({ a: 34, b: 33, c: 33 });
    expect(evenShares(['r2', 'r1'], 100)).toEqual({ r1: 50, r2: 50 });
  });

  it('apportion scales in proportion and breaks equal remainders by name', () => {
    expect(apportion({ a: 50, b: 50 }, 67)).toEqual({ a: 34, b: 33 });
    expect(apportion({ a: 1, b: 2 }, 100)).toEqual({ a: 33, b: 67 });
    expect(apportion({ a: 40, b: 40, c: 20 }, 100)).toEqual({ a: 40, b: 40, c: 20 });
  });

  it('apportion of all-zero weights is an even split', () => {
    expect(apportion({ b: 0, a: 0, c: 0 }, 100)).toEqual({ a: 34, b: 33, c: 33 });
  });
});

describe('verbs', () => {
  const w = {
    writer: { 'replica-1': 100, 'replica-2': 0, 'replica-3': 0 },
    reader: { 'replica-1': 40, 'replica-2': 40, 'replica-3': 20 },
    copyjob: { 'replica-1': 1, 'replica-2': 1, 'replica-3': 1 },
  };

  it('--set changes only the listed replicas and leaves other roles alone', () => {
    const next = applySet(w, { writer: { 'replica-1': 60, 'replica-2': 40 } });
    expect(next.writer).toEqual({ 'replica-1': 60, 'replica-2': 40, 'replica-3': 0 });
    expect(next.reader).toEqual(w.reader);
    expect(next.copyjob).toEqual(w.copyjob);
  });

  it('--even shares 100 among every replica of the cluster', () => {
    expect(applyEven(w, 'reader', ['replica-1', 'replica-2', 'replica-3']).reader).toEqual({ 'replica-1': 34, 'replica-2': 33, 'replica-3': 33 });
  });

  it('remove shares the removed weight in proportion; copyjob loses the entry', () => {
    const next = applyRemove(w, 'replica-3', ['replica-1', 'replica-2']);
    expect(next).toEqual({
      writer: { 'replica-1': 100, 'replica-2': 0 },
      reader: { 'replica-1': 50, 'replica-2': 50 },
      copyjob: { 'replica-1': 1, 'replica-2': 1 },
    });
  });

  it('removing the only writer splits its share evenly among the rest (nothing to be proportional to)', () => {
    expect(applyRemove(w, 'replica-1', ['replica-2', 'replica-3']).writer).toEqual({ 'replica-2': 50, 'replica-3': 50 });
  });

  it('remove with uneven remainders: ties by name', () => {
    const next = applyRemove({ reader: { a: 25, b: 25, c: 25, d: 25 } }, 'd', ['a', 'b', 'c']);
    expect(next.reader).toEqual({ a: 34, b: 33, c: 33 });
  });

  it('add: default new replica and existing readers scaled down to keep 100', () => {
    expect(defaultNewReplica(3)).toEqual({ writer: 0, reader: 25, copyjob: 1 });
    expect(defaultNewReplica(2)).toEqual({ writer: 0, reader: 33, copyjob: 1 });
    const next = applyAdd(w, defaultNewReplica(3), ['replica-1', 'replica-2', 'replica-3']);
    expect(next.reader).toEqual({ 'replica-1': 30, 'replica-2': 30, 'replica-3': 15 });
    expect(next.writer).toEqual(w.writer);
    expect(next.copyjob).toEqual(w.copyjob);
  });

  it('add: a role nobody is in yet is shared evenly among the existing replicas', () => {
    expect(applyAdd({ reader: {} }, { reader: 50 }, ['b', 'a']).reader).toEqual({ a: 25, b: 25 });
  });
});
