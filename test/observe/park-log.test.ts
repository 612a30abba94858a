// A park's log level (README "Logs": ERROR only when data needs an operator).
// A 403 before anything proved the token parks the budget, but a request of
// another Data Source under way may yet show it to be one Data Source's
// refusal (it does not exist): that park is a WARN marked unconfirmed, and
// only its confirmation (the other refused too) is the ERROR. An audit saw
// an ERROR `token_rejected` undone 2 ms later at every such start.
import { describe, expect, it } from 'vitest';
import { senderEvents } from './helpers.js';

function events() {
  const { logs, ev, metrics } = senderEvents();
  const parked = async () => /^spoolship_parked\{reason="token_rejected"\} (\S+)$/m.exec(await metrics.registry.metrics())?.[1];
  return { logs, ev, parked };
}

describe('park log levels', () => {
  it('an unconfirmed budget park is a WARN (still parked in the metric); its confirmation is the ERROR', async () => {
    const { logs, ev, parked } = events();
    ev.onParkChange('budget', 'token_rejected', null, 'HTTP 403', true);
    expect(logs.map((l) => [l.event, l.level, l.unconfirmed])).toEqual([['parked', 40, true]]);
    expect(await parked()).toBe('1');
    ev.onParkChange('budget', 'token_rejected', 'token_rejected', 'HTTP 403', false);
    expect(logs.map((l) => [l.event, l.level, l.still])).toEqual([
      ['parked', 40, undefined],
      ['parked', 50, true],
    ]);
  });

  it('a park nothing may undo is an ERROR at once', () => {
    const { logs, ev } = events();
    ev.onParkChange('budget', 'token_rejected', null, 'HTTP 401', false);
    ev.onParkChange({ ds: 'ev' }, 'datasource_rejected', null, 'HTTP 403');
    expect(logs.map((l) => [l.event, l.level, l.unconfirmed])).toEqual([
      ['parked', 50, undefined],
      ['parked', 50, undefined],
    ]);
  });
});
